// The pod informer's decoder (api/pod_event.h, act/pod_decoder.h): a watch line read by SAX into the same facts,
// key and resourceVersion as json::parse + WatchEvent::parse + parse_pod_facts give, and refusing what they refuse.
#include "trainingjob/api/pod_event.h"

#include <gtest/gtest.h>

#include <random>

#include "kube/watch_event.h"
#include "mutate.h"
#include "trainingjob/act/pod_decoder.h"
#include "trainingjob/api/facts.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

// Pods of every shape the DOM path reads: fields in any order, absent, null, of other types, deep unknown ones.
const char* const kPods[] = {
    R"({"metadata": {"name": "resnet-node-2", "uid": "p2", "labels": {"kubedist.io/node-rank": "2"},
        "ownerReferences": [{"uid": "other", "controller": false}, {"uid": "uid-1", "controller": true},
                            {"uid": "second", "controller": true}]},
        "spec": {"containers": [{"name": "side"}, {"name": "trainer"}]},
        "status": {"phase": "Failed", "startTime": "2026-01-01T00:00:00Z",
                   "conditions": [{"type": "Ready", "status": "False"}],
                   "containerStatuses": [
                     {"name": "side", "state": {"terminated": {"exitCode": 0}}},
                     {"name": "trainer", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}})",
    // status before spec: the trainer is known only at the end
    R"({"status": {"reason": "Evicted", "containerStatuses": [
          {"name": "main", "state": {"terminated": {"exitCode": 3, "reason": "Error", "finishedAt": "t1",
                                                    "message": "\n\u00e9 first line\nsecond"}}},
          {"name": "other", "state": {"terminated": {"exitCode": 4}}}, 7, {"state": "odd"}]},
        "metadata": {"namespace": "n", "name": "j-node-0", "deletionTimestamp": "2026-12-03T05:00:00Z",
                     "labels": {"kubedist.io/node-rank": "0", "kubedist.io/job-name": "j"}},
        "spec": {"containers": [{"name": "main", "image": "x", "env": [{"name": "A", "value": "b"}]}],
                 "nodeName": "gpu-2", "volumes": [{"name": "kubedist-rendezvous"}, "bad", {"name": 3}]}})",
    R"({"metadata": {"name": "x", "labels": {"kubedist.io/node-rank": "01"}, "deletionTimestamp": null,
                     "managedFields": [{"fieldsV1": {"f:spec": {"f:containers": {"k:{\"name\":\"trainer\"}": {}}}}}]},
        "spec": {"volumes": [{"name": "kubedist-rdzv", "secret": {"secretName": "x-rdzv"}}],
                 "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": 3, "podIP": "10.0.0.7", "conditions": [
          "odd", {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                  "lastTransitionTime": "2026-12-03T05:00:01Z",
                  "message": "0/3 nodes are available: persistentvolumeclaim \"ckpt\" not found.\nmore"},
          {"type": "Ready", "status": "True"}],
          "containerStatuses": [{"name": "b", "state": {"terminated": {"exitCode": 1.5, "reason": "Error"}}},
                                {"name": "a", "state": {"terminated": {"exitCode": 18446744073709551615}}}]}})",
    R"({"metadata": {"name": "y", "labels": {"kubedist.io/node-rank": "1234567"}, "deletionTimestamp": {"x": 1}},
        "spec": "bad", "status": [1, 2]})",
    R"({"metadata": {"name": "z", "labels": {"kubedist.io/node-rank": "999999"}}, "spec": {"containers": []}})",
    R"({"metadata": {"name": "w", "labels": "none", "ownerReferences": "none"}})",
    R"({"metadata": {}})",
    // the fingerprint of the rendezvous key the pod derives from (annotation), and annotations of other shapes
    R"({"metadata": {"name": "k", "annotations": {"a": {"b": 1}, "kubedist.io/rendezvous-key": "0123456789abcdef"}}})",
    R"({"metadata": {"name": "k2", "annotations": {"kubedist.io/rendezvous-key": 7}}})",
    R"({"metadata": {"name": "k3", "annotations": ["kubedist.io/rendezvous-key"]}})",
    // its node's topology domain (annotation): written, empty, of another type, or too long (kept cut)
    R"({"metadata": {"name": "d", "annotations": {"kubedist.io/topology-domain": "rack-a"}}})",
    R"({"metadata": {"name": "d2", "annotations": {"kubedist.io/topology-domain": ""}}})",
    R"({"metadata": {"name": "d3", "annotations": {"kubedist.io/topology-domain": {"rack": "a"}}}})",
    R"({"metadata": {"name": "d4", "annotations": {"kubedist.io/topology-domain": "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"}}})",
};

json event_of(const char* pod, const char* type = "MODIFIED") {
  return {{"type", type}, {"object", json::parse(pod)}};
}

TEST(ReadPodEvent, ReadsWhatTheDomPathReadsFromPodsOfEveryShape) {
  for (const char* pod : kPods) {
    for (const char* type : {"ADDED", "MODIFIED", "DELETED"}) {
      const json event = event_of(pod, type);
      PodEvent read;
      ASSERT_TRUE(read_pod_event(event.dump(), read)) << pod;
      const kube::WatchEvent dom = kube::WatchEvent::parse(event);
      EXPECT_EQ(kube::WatchEvent::type_of(read.type), dom.type) << pod;
      EXPECT_TRUE(read.has_object);
      EXPECT_FALSE(read.malformed) << pod;
      EXPECT_EQ(read.key, kube::object_key(dom.object)) << pod;
      EXPECT_EQ(read.resource_version, dom.resource_version) << pod;
      EXPECT_EQ(read.facts, parse_pod_facts(dom.object)) << pod;
    }
  }
}

// A pod of a list page (kube/list_page.h) is read as an ADDED event's object: the same facts, key and version.
TEST(ReadPodEvent, ReadsTheTopologyDomainAnnotationAsTheDomPathDoes) {
  const auto domain = [](const char* pod) { return parse_pod_facts(json::parse(pod)).topology_domain; };
  EXPECT_EQ(domain(kPods[10]), std::optional<std::string>("rack-a"));
  EXPECT_EQ(domain(kPods[11]), std::optional<std::string>(""));
  EXPECT_EQ(domain(kPods[12]), std::nullopt);
  EXPECT_EQ(domain(kPods[13]), std::optional<std::string>(std::string(kMaxTopologyDomain, 'r')));
  EXPECT_EQ(domain(kPods[0]), std::nullopt);
}

TEST(ReadPodObject, ReadsAListsPodAsTheEventsObject) {
  for (const char* pod : kPods) {
    PodEvent as_event, as_object;
    ASSERT_TRUE(read_pod_event(event_of(pod, "ADDED").dump(), as_event));
    ASSERT_TRUE(read_pod_object(json::parse(pod).dump(), as_object)) << pod;
    EXPECT_EQ(as_object.type, "ADDED");
    EXPECT_TRUE(as_object.has_object);
    EXPECT_EQ(as_object.malformed, as_event.malformed);
    EXPECT_EQ(as_object.key, as_event.key) << pod;
    EXPECT_EQ(as_object.resource_version, as_event.resource_version) << pod;
    EXPECT_EQ(as_object.facts, as_event.facts) << pod;
  }
  PodEvent read;
  EXPECT_FALSE(read_pod_object(R"({"metadata": {"name": "x"})", read));  // not JSON
  ASSERT_TRUE(read_pod_object(R"({"spec": {}})", read));             // no metadata: nothing to apply
  EXPECT_FALSE(read.has_object);
  ASSERT_TRUE(read_pod_object("[1]", read));
  EXPECT_FALSE(read.has_object);
  const auto decoded = decode_pod_object(json::parse(kPods[1]).dump());
  ASSERT_TRUE(decoded && decoded->projected);
  EXPECT_EQ(decoded->event.type, kube::WatchEvent::Type::kAdded);
  EXPECT_EQ(decoded->key, "n/j-node-0");
  EXPECT_EQ(decoded->projected->exit_code, 3);
}

// Mutations of those pods' events (a byte deleted, replaced or inserted): the reading, which skips what it does not
// read, refuses exactly the texts json::parse refuses, and where both take one, reads what the DOM path reads.
TEST(ReadPodEvent, AgreesWithTheDomPathOnMutatedEvents) {
  std::mt19937 rng(25);
  const std::string alphabet = "{}[]\",:0123456789.-eEtrufalsn\\ \xC3\xA9\xED\x80\x01";
  int compared = 0;
  for (int round = 0; round < 20000; ++round) {
    const std::string text = testing::mutate(event_of(kPods[rng() % std::size(kPods)]).dump(), rng, alphabet, 2);
    const json dom = json::parse(text, nullptr, false);
    PodEvent read;
    ASSERT_EQ(read_pod_event(text, read), !dom.is_discarded()) << text;
    if (dom.is_discarded() || !dom.is_object() || !dom.contains("object") || !dom["object"].is_object() ||
        !dom["object"].contains("metadata") || !dom["object"]["metadata"].is_object() || !read.has_object) {
      continue;
    }
    const kube::WatchEvent event = kube::WatchEvent::parse(dom);
    bool refused = false;
    PodFacts facts;
    try {
      facts = parse_pod_facts(event.object);
    } catch (const std::exception&) {
      refused = true;
    }
    ASSERT_EQ(read.malformed, refused) << text;
    if (refused) continue;
    ASSERT_EQ(read.key, kube::object_key(event.object)) << text;
    ASSERT_EQ(read.resource_version, event.resource_version) << text;
    ASSERT_EQ(read.facts, facts) << text;
    ++compared;
  }
  EXPECT_GT(compared, 1000);
}

TEST(ReadPodEvent, FlagsWhatParsePodFactsRefuses) {
  for (const char* pod : {R"({"metadata": {"name": "a"}, "spec": {"containers": ["trainer"]}})",
                          R"({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "trainer"}, [1]]}})",
                          R"({"metadata": {"name": "a", "ownerReferences": [{"uid": "u", "controller": "yes"}]}})",
                          R"({"metadata": {"name": "a", "ownerReferences": [{"uid": "u", "controller": null}]}})"}) {
    EXPECT_THROW(parse_pod_facts(json::parse(pod)), std::exception) << pod;
    PodEvent read;
    ASSERT_TRUE(read_pod_event(event_of(pod).dump(), read));
    EXPECT_TRUE(read.malformed) << pod;
    auto decoded = decode_pod_event(event_of(pod).dump());
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->event.type, kube::WatchEvent::Type::kModified);
    EXPECT_EQ(decoded->key, "/a");
    EXPECT_FALSE(decoded->projected.has_value()) << pod;
  }
}

TEST(DecodePodEvent, ErrorsBookmarksAndObjectsWithoutMetadataAsWatchEventHasThem) {
  using Type = kube::WatchEvent::Type;
  auto gone = decode_pod_event(R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})");
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->event.type, Type::kError);
  EXPECT_EQ(gone->event.error_code, 410);
  EXPECT_EQ(gone->event.error_message, "too old");
  auto bookmark = decode_pod_event(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"77"}}})");
  ASSERT_TRUE(bookmark.has_value());
  EXPECT_EQ(bookmark->event.type, Type::kBookmark);
  EXPECT_EQ(bookmark->event.resource_version, "77");
  for (const char* ignored : {R"({"type":"ADDED","object":{"spec":{}}})", R"({"type":"ADDED","object":[1]})",
                              R"({"type":"SOMETHING","object":{"metadata":{"name":"a"}}})", R"([1, 2])", "3"}) {
    auto decoded = decode_pod_event(ignored);
    ASSERT_TRUE(decoded.has_value()) << ignored;
    EXPECT_EQ(decoded->event.type, Type::kIgnored) << ignored;
    EXPECT_EQ(decoded->event.type, kube::WatchEvent::parse(json::parse(ignored)).type) << ignored;
  }
  for (const char* bad : {"", "{", R"({"type":"ADDED","object":{"metadata":{"name":"a"}})", "{\"a\":1} x"}) {
    EXPECT_FALSE(decode_pod_event(bad).has_value()) << bad;
  }
  auto deleted = decode_pod_event(R"({"type":"DELETED","object":{"metadata":{"namespace":"n","name":"p",
    "resourceVersion":"9"}}})");
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->event.type, Type::kDeleted);
  EXPECT_EQ(deleted->key, "n/p");
  EXPECT_EQ(deleted->event.resource_version, "9");
}

}  // namespace
}  // namespace kubedist::trainingjob
