#include "kube/list_page.h"

#include "common/json_reader.h"

namespace kubedist::kube {
namespace {

using json_reader::Cursor;

// A string value at the cursor (its opening quote not yet consumed): decoded into out.
bool string_value(Cursor& c, std::string* out) {
  c.skip_whitespace();
  if (!c.take('"')) return false;
  std::string_view s;
  if (!c.read_string(&s)) return false;
  if (out != nullptr) *out = s;
  return true;
}

// Calls field(key) for each member of the object at the cursor; field reads the value. False on bad JSON.
template <typename Field>
bool object(Cursor& c, Field field) {
  c.skip_whitespace();
  if (!c.take('{')) return false;
  c.skip_whitespace();
  if (c.take('}')) return true;
  for (;;) {
    std::string key;
    if (!string_value(c, &key)) return false;
    c.skip_whitespace();
    if (!c.take(':')) return false;
    if (!field(key)) return false;
    c.skip_whitespace();
    if (c.take('}')) return true;
    if (!c.take(',')) return false;
  }
}

bool items(Cursor& c, ListPage& page, const std::function<void(std::string_view)>& on_item) {
  c.skip_whitespace();
  if (c.take_literal("null")) return true;
  if (!c.take('[')) return false;
  c.skip_whitespace();
  if (c.take(']')) return true;
  for (;;) {
    c.skip_whitespace();
    const char* start = c.position();
    if (!c.skip_value()) return false;
    on_item(std::string_view(start, static_cast<size_t>(c.position() - start)));
    ++page.items;
    c.skip_whitespace();
    if (c.take(']')) return true;
    if (!c.take(',')) return false;
  }
}

}  // namespace

bool read_list_page(std::string_view body, ListPage& page, const std::function<void(std::string_view item)>& on_item) {
  page = ListPage{};
  Cursor c(body);
  const bool ok = object(c, [&](const std::string& key) {
    if (key == "items") return items(c, page, on_item);
    if (key == "metadata") {
      return object(c, [&](const std::string& field) {
        if (field == "continue") return string_value(c, &page.continue_token);
        if (field == "resourceVersion") return string_value(c, &page.resource_version);
        return c.skip_value();
      });
    }
    return c.skip_value();
  });
  if (!ok) return false;
  c.skip_whitespace();
  return c.at_end();
}

}  // namespace kubedist::kube
