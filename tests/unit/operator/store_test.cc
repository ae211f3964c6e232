// Store<T>: the informer's cache, driven by synthetic watch events and relists (no API server).
#include "kube/store.h"

#include <gtest/gtest.h>

namespace kubedist::kube {
namespace {

using nlohmann::json;

// A compact projection: the name and one label (the "owner"); other fields are not looked at.
struct Item {
  std::string name;
  std::string owner;
  bool operator==(const Item&) const = default;
};

Store<Item> make_store() {
  return Store<Item>(
      [](const json& obj) {
        return Item{obj.at("metadata").at("name").get<std::string>(),
                    obj["metadata"].value("labels", json::object()).value("owner", "")};
      },
      [](const Item& i) { return i.owner; });
}

json object(const std::string& name, const std::string& owner, const std::string& rv, const std::string& extra = "") {
  return {{"metadata",
           {{"namespace", "ns"}, {"name", name}, {"resourceVersion", rv}, {"labels", {{"owner", owner}}}}},
          {"status", extra}};
}

WatchEvent event(const std::string& type, json obj) {
  return WatchEvent::parse({{"type", type}, {"object", std::move(obj)}});
}

using Change = Store<Item>::Change;

TEST(WatchEvent, ReadsTypeObjectAndResourceVersion) {
  const auto e = event("MODIFIED", object("a", "j", "42"));
  EXPECT_EQ(e.type, WatchEvent::Type::kModified);
  EXPECT_EQ(e.resource_version, "42");
  EXPECT_EQ(object_key(e.object), "ns/a");
}

TEST(WatchEvent, AnObjectWithoutMetadataIsIgnored) {
  EXPECT_EQ(event("ADDED", json{{"kind", "Pod"}}).type, WatchEvent::Type::kIgnored);
  EXPECT_EQ(WatchEvent::parse(json::array()).type, WatchEvent::Type::kIgnored);
}

TEST(Store, AddsAndIndexesAnObjectAndReportsItsOwner) {
  auto store = make_store();
  const auto applied = store.apply(event("ADDED", object("a", "job1", "1")));
  EXPECT_EQ(applied.next, AfterEvent::kContinue);
  EXPECT_EQ(applied.change, (Change{"ns/a", "job1"}));
  EXPECT_EQ(store.get("ns/a"), (Item{"a", "job1"}));
  EXPECT_EQ(store.by_index("job1"), (std::vector<Item>{{"a", "job1"}}));
}

TEST(Store, AModificationOfFieldsItDoesNotKeepChangesNothing) {
  auto store = make_store();
  store.apply(event("ADDED", object("a", "job1", "1", "Pending")));
  const auto applied = store.apply(event("MODIFIED", object("a", "job1", "2", "Running")));
  EXPECT_EQ(applied.next, AfterEvent::kContinue);
  EXPECT_FALSE(applied.change);
}

TEST(Store, AnObjectThatChangesOwnerMovesBetweenIndexEntries) {
  auto store = make_store();
  store.apply(event("ADDED", object("a", "job1", "1")));
  const auto applied = store.apply(event("MODIFIED", object("a", "job2", "2")));
  EXPECT_EQ(applied.change, (Change{"ns/a", "job2"}));
  EXPECT_TRUE(store.by_index("job1").empty());
  EXPECT_EQ(store.by_index("job2").size(), 1u);
}

TEST(Store, ADeleteReportsTheLastKnownOwnerAndForgetsTheObject) {
  auto store = make_store();
  store.apply(event("ADDED", object("a", "job1", "1")));
  // A deleted object's final state may differ; the owner we knew is the one to tell.
  const auto applied = store.apply(event("DELETED", object("a", "", "3")));
  EXPECT_EQ(applied.change, (Change{"ns/a", "job1"}));
  EXPECT_FALSE(store.get("ns/a"));
  EXPECT_TRUE(store.by_index("job1").empty());
}

TEST(Store, ADeleteOfAnObjectItNeverHadChangesNothing) {
  auto store = make_store();
  store.apply(event("ADDED", object("a", "job1", "1")));
  const auto applied = store.apply(event("DELETED", object("b", "job1", "2")));
  EXPECT_EQ(applied.next, AfterEvent::kContinue);
  EXPECT_FALSE(applied.change);
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"ns/a"}));
}

TEST(Store, ABookmarkChangesNothing) {
  auto store = make_store();
  store.apply(event("ADDED", object("a", "job1", "1")));
  const auto bookmark = event("BOOKMARK", json{{"metadata", {{"resourceVersion", "99"}}}});
  EXPECT_EQ(bookmark.resource_version, "99");  // the stream resumes from it
  const auto applied = store.apply(bookmark);
  EXPECT_EQ(applied.next, AfterEvent::kContinue);
  EXPECT_FALSE(applied.change);
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"ns/a"}));
}

TEST(Store, ErrorsAskForARelistOnlyWhenTheVersionIsGone) {
  struct Case {
    const char* name;
    json status;
    AfterEvent want;
  };
  const std::vector<Case> cases = {
      {"410 Gone: relist", {{"kind", "Status"}, {"code", 410}, {"message", "too old resource version"}}, AfterEvent::kRelist},
      {"500: watch again", {{"kind", "Status"}, {"code", 500}, {"message", "internal error"}}, AfterEvent::kRewatch},
      {"no Status: watch again", nullptr, AfterEvent::kRewatch},
  };
  for (const auto& c : cases) {
    auto store = make_store();
    store.apply(event("ADDED", object("a", "job1", "1")));
    const auto applied = store.apply(event("ERROR", c.status));
    EXPECT_EQ(applied.next, c.want) << c.name;
    EXPECT_FALSE(applied.change) << c.name;
    EXPECT_TRUE(store.get("ns/a")) << c.name << ": the cache keeps its contents until the relist";
  }
}

TEST(Store, AMalformedObjectIsSkipped) {
  auto store = make_store();
  const auto applied = store.apply(event("ADDED", json{{"metadata", {{"namespace", "ns"}, {"name", 7}}}}));
  EXPECT_EQ(applied.next, AfterEvent::kContinue);
  EXPECT_FALSE(applied.change);
  EXPECT_TRUE(store.keys().empty());
}

TEST(Store, AnEventProjectedByADecoderChangesTheCacheAsTheParsedOneWould) {
  auto store = make_store();
  WatchEvent added;  // as a decoder hands it: no object
  added.type = WatchEvent::Type::kAdded;
  EXPECT_EQ(store.apply_projected(added, "ns/a", Item{"a", "job1"}).change, (Change{"ns/a", "job1"}));
  EXPECT_EQ(store.by_index("job1"), (std::vector<Item>{{"a", "job1"}}));
  WatchEvent modified;
  modified.type = WatchEvent::Type::kModified;
  EXPECT_FALSE(store.apply_projected(modified, "ns/a", Item{"a", "job1"}).change);  // nothing kept changed
  EXPECT_FALSE(store.apply_projected(modified, "ns/a", std::nullopt).change);       // skipped, kept as it was
  EXPECT_EQ(store.get("ns/a"), (Item{"a", "job1"}));
  WatchEvent deleted;
  deleted.type = WatchEvent::Type::kDeleted;
  EXPECT_EQ(store.apply_projected(deleted, "ns/a", std::nullopt).change, (Change{"ns/a", "job1"}));
  EXPECT_TRUE(store.keys().empty());
  WatchEvent gone;
  gone.type = WatchEvent::Type::kError;
  gone.error_code = 410;
  EXPECT_EQ(store.apply_projected(gone, "", std::nullopt).next, AfterEvent::kRelist);
}

TEST(Store, AReplaceReportsWhatIsGoneNewOrChanged) {
  auto store = make_store();
  store.apply(event("ADDED", object("kept", "job1", "1")));
  store.apply(event("ADDED", object("gone", "job2", "2")));
  store.apply(event("ADDED", object("moved", "job1", "3")));
  std::map<std::string, Item> fresh = {
      {"ns/kept", {"kept", "job1"}}, {"ns/moved", {"moved", "job3"}}, {"ns/new", {"new", "job4"}}};
  auto changes = store.replace(std::move(fresh));
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.key < b.key; });
  EXPECT_EQ(changes, (std::vector<Change>{{"ns/gone", "job2"}, {"ns/moved", "job3"}, {"ns/new", "job4"}}));
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"ns/kept", "ns/moved", "ns/new"}));
  EXPECT_TRUE(store.by_index("job2").empty());
  EXPECT_EQ(store.by_index("job1"), (std::vector<Item>{{"kept", "job1"}}));
}

TEST(Store, WithoutAnIndexByIndexFindsNothing) {
  Store<Item> store([](const json& obj) { return Item{obj["metadata"].value("name", ""), ""}; }, nullptr);
  const auto applied = store.apply(event("ADDED", object("a", "job1", "1")));
  EXPECT_EQ(applied.change, (Change{"ns/a", ""}));
  EXPECT_EQ(store.by_index("").size(), 0u);
}

}  // namespace
}  // namespace kubedist::kube
