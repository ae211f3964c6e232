// A list page read item by item (kube/list_page.h): each element of "items" handed over as its own text, which
// parses to what json::parse makes of the page's element, with the page's continue token and resourceVersion; a
// page that is no list refused.
#include "kube/list_page.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mutate.h"

namespace kubedist::kube {
namespace {

using nlohmann::json;

std::vector<json> items_of(std::string_view body, ListPage& page, bool* ok) {
  std::vector<json> out;
  *ok = read_list_page(body, page, [&](std::string_view item) { out.push_back(json::parse(item)); });
  return out;
}

TEST(ReadListPage, HandsOverEachItemAndThePagesMetadata) {
  const std::string body = R"( {"kind": "PodList", "apiVersion": "v1",
      "metadata": {"resourceVersion": "1234", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", "remainingItemCount": 7},
      "items": [{"metadata": {"name": "a", "labels": {"x": "\u00e9"}}, "spec": {"containers": [{"env": []}]}},
                {"metadata": {"name": "b"}, "status": {"phase": "Pending"}} , 3, null, "s", [1, {"k": [2]}]]} )";
  ListPage page;
  bool ok = false;
  const auto items = items_of(body, page, &ok);
  ASSERT_TRUE(ok);
  EXPECT_EQ(page.resource_version, "1234");
  EXPECT_EQ(page.continue_token, "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ");
  EXPECT_EQ(page.items, 6u);
  EXPECT_EQ(json(items), json::parse(body)["items"]);
}

TEST(ReadListPage, TakesAnEmptyOrNullListAndFieldsInAnyOrder) {
  for (const char* body : {R"({"items": [], "metadata": {"resourceVersion": "9"}})",
                           R"({"items": null, "metadata": {"resourceVersion": "9", "continue": ""}})",
                           R"({"metadata": {"resourceVersion": "9"}})"}) {
    ListPage page;
    bool ok = false;
    EXPECT_TRUE(items_of(body, page, &ok).empty());
    EXPECT_TRUE(ok) << body;
    EXPECT_EQ(page.resource_version, "9");
    EXPECT_EQ(page.continue_token, "");
  }
}

TEST(ReadListPage, RefusesWhatIsNoList) {
  for (const char* body : {"", "[]", "null", R"({"items": {}})", R"({"items": [1,]})", R"({"items": [1]} x)",
                           R"({"metadata": [], "items": []})", R"({"metadata": {"continue": 5}})",
                           R"({"metadata": {"resourceVersion": null}})", R"({"items": [1])", R"({"items": ["\x"]})"}) {
    ListPage page;
    bool ok = true;
    items_of(body, page, &ok);
    EXPECT_FALSE(ok) << body;
  }
}

// Mutated pages: every page it takes is JSON, and its items are exactly json::parse's.
TEST(ReadListPage, AgreesWithTheDomOnMutatedPages) {
  const std::string base = R"({"metadata": {"resourceVersion": "5", "continue": "c"}, "items": [
      {"metadata": {"name": "a"}, "spec": {"env": [{"name": "A", "value": "b\u00e9"}]}}, [1, 2.5e3, true], "t"]})";
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\",:0123456789.-eEtrufalsn\\ \xC3\xA9\xED\x80";
  int taken = 0;
  for (int round = 0; round < 20000; ++round) {
    const std::string text = testing::mutate(base, rng, alphabet, 2);
    std::vector<std::string> items;
    ListPage page;
    const bool ok = read_list_page(text, page, [&](std::string_view item) { items.emplace_back(item); });
    if (!ok) continue;
    const json dom = json::parse(text, nullptr, false);
    ASSERT_FALSE(dom.is_discarded()) << text;
    json read = json::array();
    for (const auto& item : items) read.push_back(json::parse(item));
    const json want = dom.contains("items") && dom["items"].is_array() ? dom["items"] : json::array();
    ASSERT_EQ(read, want) << text;
    ++taken;
  }
  EXPECT_GT(taken, 1000);
}

}  // namespace
}  // namespace kubedist::kube
