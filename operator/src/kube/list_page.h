// One page of a list (GET .../pods?limit=N): its items handed over one at a time as the text of each, and the
// page's continue token and resourceVersion, without a JSON tree of the whole page. A relist of large objects (a
// tenant's pods with megabytes of environment) then holds one page of text and one item's tree at most, or no tree
// at all where the item is read straight into what is kept (api/pod_event.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace kubedist::kube {

struct ListPage {
  std::string continue_token;    // metadata.continue: "" on the last page
  std::string resource_version;  // metadata.resourceVersion
  size_t items = 0;
};

// Reads body, a list as the API server sends it (an object with "metadata" and "items", other fields skipped),
// calling on_item with the text of each element of "items" in order. False when body is not such a list: not one
// JSON value, not an object, "items" neither an array nor null, "metadata" not an object or its two fields not
// strings. The elements are checked as JSON (json_reader's rules: nlohmann's), not decoded.
bool read_list_page(std::string_view body, ListPage& page, const std::function<void(std::string_view item)>& on_item);

}  // namespace kubedist::kube
