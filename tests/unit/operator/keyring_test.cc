// The keyring Secret (act/keyring.h) on the in-memory FakeApi: what it loads, what it writes, and when it writes.
#include "trainingjob/act/keyring.h"

#include <gtest/gtest.h>

#include "fake_api.h"
#include "rendezvous/rdzv_auth.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;
using kubedist::testing::base64;
using kubedist::testing::FakeApi;

const std::string kPath = "/api/v1/namespaces/kubedist-system/secrets/kd-keyring";

std::string fp(const std::string& key) { return rendezvous::rdzv_key_fingerprint(key); }

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += std::string{digits[c >> 4], digits[c & 15]};
  return out;
}

// The Secret as the API server serves it once the patches' stringData landed in its data.
json served(const std::map<std::string, std::string>& entries) {
  json data = json::object();
  for (const auto& [entry, key] : entries) data[entry] = base64(hex(key));
  return {{"metadata", {{"name", "kd-keyring"}, {"namespace", "kubedist-system"}}}, {"data", data}};
}

TEST(Keyring, LoadsEveryValidKeyOnceAndLeavesOutEntriesThatHoldNone) {
  FakeApi api;
  const std::string k1 = "key-one", k2 = std::string("\xff\x00replaced", 10);  // a replaced key: any bytes
  json secret = served({{"team-a." + fp(k1), k1}, {"team-b." + fp(k2), k2}});
  secret["data"]["team-c." + fp(k1)] = base64(hex("another-key"));  // the fingerprint is not its key's
  secret["data"]["no-dot"] = base64(hex(k1));
  secret["data"]["team-d." + fp(k1)] = base64("not hex");
  secret["data"]["team-e." + fp(k1)] = "%%%";  // not base64
  api.put(kPath, secret);
  Keyring keyring(api, "kubedist-system/kd-keyring");
  RendezvousKeys keys;
  ASSERT_TRUE(keyring.load_into(keys));
  EXPECT_EQ(keys.all("team-a"), (std::map<std::string, std::string>{{fp(k1), k1}}));
  EXPECT_EQ(keys.all("team-b"), (std::map<std::string, std::string>{{fp(k2), k2}}));
  for (const char* ns : {"team-c", "team-d", "team-e"}) EXPECT_TRUE(keys.all(ns).empty()) << ns;
  // Once: a second call asks nothing.
  ASSERT_TRUE(keyring.load_into(keys));
  EXPECT_EQ(api.calls("get", kPath).size(), 1u);
  // What it holds is not written again.
  ASSERT_TRUE(keyring.keep("team-a", keys.all("team-a")));
  EXPECT_TRUE(api.calls("patch", kPath).empty());
}

TEST(Keyring, StoresANewKeyInHexAndRemovesTheOnesMemoryNoLongerKeeps) {
  FakeApi api;
  api.put(kPath, served({}));
  Keyring keyring(api, "kubedist-system/kd-keyring");
  RendezvousKeys keys;
  ASSERT_TRUE(keyring.load_into(keys));
  const std::string first = *keys.to_create("team-a");
  ASSERT_TRUE(keyring.keep("team-a", keys.all("team-a")));
  auto patches = api.calls("patch", kPath);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].body, (json{{"stringData", {{"team-a." + fp(first), hex(first)}}}}));
  // More keys than memory keeps for one namespace: the oldest leaves memory and the Secret in the same write.
  for (size_t i = 1; i <= RendezvousKeys::kKeptPerNamespace; ++i) {
    keys.seen("team-a", "key-" + std::to_string(i));
    ASSERT_TRUE(keyring.keep("team-a", keys.all("team-a")));
  }
  patches = api.calls("patch", kPath);
  ASSERT_EQ(patches.size(), 1 + RendezvousKeys::kKeptPerNamespace);
  const json& last = patches.back().body;
  const std::string newest = "key-" + std::to_string(RendezvousKeys::kKeptPerNamespace);
  EXPECT_EQ(last["stringData"], (json{{"team-a." + fp(newest), hex(newest)}}));
  EXPECT_EQ(last["data"], (json{{"team-a." + fp(first), nullptr}}));
  // Another namespace's keys are its own entries.
  keys.seen("team-b", "b-key");
  ASSERT_TRUE(keyring.keep("team-b", keys.all("team-b")));
  EXPECT_EQ(api.calls("patch", kPath).back().body, (json{{"stringData", {{"team-b." + fp("b-key"), hex("b-key")}}}}));
}

TEST(Keyring, AFailedWriteIsReturnedAndTriedAgain) {
  FakeApi api;
  api.put(kPath, served({}));
  Keyring keyring(api, "kubedist-system/kd-keyring");
  RendezvousKeys keys;
  ASSERT_TRUE(keyring.load_into(keys));
  keys.seen("team-a", "k");
  api.answer("patch", kPath, 500);
  const auto failed = keyring.keep("team-a", keys.all("team-a"));
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("kubedist-system/kd-keyring"), std::string::npos) << failed.error().message;
  ASSERT_TRUE(keyring.keep("team-a", keys.all("team-a")));
  EXPECT_EQ(api.calls("patch", kPath).size(), 2u);
  ASSERT_TRUE(keyring.keep("team-a", keys.all("team-a")));
  EXPECT_EQ(api.calls("patch", kPath).size(), 2u);
}

TEST(Keyring, AFailedReadIsReturnedAndTriedAgain) {
  FakeApi api;
  api.put(kPath, served({{"team-a." + fp("k"), "k"}}));
  Keyring keyring(api, "kubedist-system/kd-keyring");
  RendezvousKeys keys;
  api.answer("get", kPath, 403);
  ASSERT_FALSE(keyring.load_into(keys));
  EXPECT_TRUE(keys.all("team-a").empty());
  ASSERT_TRUE(keyring.load_into(keys));
  EXPECT_EQ(keys.all("team-a").size(), 1u);
}

TEST(Keyring, WithoutItsSecretTheKeysStayInMemoryOnly) {
  FakeApi api;
  Keyring keyring(api, "kubedist-system/kd-keyring");
  RendezvousKeys keys;
  ASSERT_TRUE(keyring.load_into(keys));  // 404: said in the log, not an error
  keys.seen("team-a", "k");
  ASSERT_TRUE(keyring.keep("team-a", keys.all("team-a")));
  EXPECT_TRUE(api.calls("patch", kPath).empty());
  // Deleted after it was read: the same from then on.
  FakeApi api2;
  api2.put(kPath, served({}));
  Keyring later(api2, "kubedist-system/kd-keyring");
  ASSERT_TRUE(later.load_into(keys));
  api2.erase(kPath);
  ASSERT_TRUE(later.keep("team-a", keys.all("team-a")));
  keys.seen("team-a", "k2");
  ASSERT_TRUE(later.keep("team-a", keys.all("team-a")));
  EXPECT_EQ(api2.calls("patch", kPath).size(), 1u);
}

TEST(Keyring, TheFlagTakesOnlyANamespaceAndASecretName) {
  EXPECT_EQ(check_keyring_secret("kubedist-system/kd-keyring"), "");
  EXPECT_EQ(check_keyring_secret("ns/a.b-c"), "");
  const std::vector<std::string> bad_secrets = {"",      "kd-keyring", "/kd-keyring", "ns/",   "Ns/x",
                                                "ns/X",  "ns/a/b",     "n_s/x",       "-ns/x", "ns/-x",
                                                "ns/x.", std::string(64, 'a') + "/x", "ns/" + std::string(254, 'a')};
  for (const auto& bad : bad_secrets) {
    EXPECT_NE(check_keyring_secret(bad), "") << bad;
  }
  std::string ns, fingerprint;
  EXPECT_TRUE(parse_keyring_entry(keyring_entry("team-a", "0123abcd"), &ns, &fingerprint));
  EXPECT_EQ(ns + " " + fingerprint, "team-a 0123abcd");
  for (const char* bad : {"team-a", "team-a.", ".abcd", "Team.abcd", "team-a.xyz", "team-a.abc"}) {
    EXPECT_FALSE(parse_keyring_entry(bad, &ns, &fingerprint)) << bad;
  }
}

}  // namespace
}  // namespace kubedist::trainingjob
