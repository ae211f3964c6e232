// Text the operator did not write (a worker's hang stacks, a termination message) reaches every Event, condition
// and status string as valid UTF-8, cut at character boundaries; a body that still cannot be written as JSON is
// its own error, never "API server unreachable", never retried (issue 39 item 2).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "common/utf8.h"
#include "contract/status_line.h"
#include "fake_api.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "test_jobs.h"
#include "trainingjob/act/launcher_poller.h"
#include "trainingjob/api/json_fields.h"
#include "trainingjob/api/status_json.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/decide/launcher.h"
#include "trainingjob/decide/plan.h"

namespace kubedist {
namespace {

using nlohmann::json;

const std::string kFffd(kReplacementCharacter);

// Whether nlohmann can write text into a request body: what the API client does with every string.
bool serializes(const std::string& text) {
  try {
    (void)json(text).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

TEST(ValidUtf8, KeepsValidTextAndReplacesEachIllFormedSequenceByOneReplacementCharacter) {
  struct Case {
    const char* name;
    std::string in;
    std::string out;
  };
  const Case cases[] = {
      {"ASCII", "rank 3 stuck", "rank 3 stuck"},
      {"CJK, emoji, accents", "数据 \xF0\x9F\x94\xA5 \xC3\xA9", "数据 \xF0\x9F\x94\xA5 \xC3\xA9"},
      {"a lone continuation byte", "a\x80z", "a" + kFffd + "z"},
      {"bytes that are never UTF-8", "\xFF\xFE", kFffd + kFffd},
      {"a Python bytes repr's latin-1", "b'caf\xE9'", "b'caf" + kFffd + "'"},
      {"a character cut short, then ASCII", "\xE6\x95x", kFffd + "x"},
      {"a character cut short at the end", "ok\xE6\x95", "ok" + kFffd},
      {"an overlong slash", "\xC0\xAF", kFffd + kFffd},
      {"an overlong three-byte form", "\xE0\x80\xAF", kFffd + kFffd + kFffd},
      {"a surrogate", "\xED\xA0\x80", kFffd + kFffd + kFffd},
      {"above U+10FFFF", "\xF4\x90\x80\x80", kFffd + kFffd + kFffd + kFffd},
      {"NUL stays (valid, JSON escapes it)", std::string("a\0b", 3), std::string("a\0b", 3)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(valid_utf8(c.in), c.out);
    EXPECT_TRUE(is_valid_utf8(c.out));
    EXPECT_EQ(is_valid_utf8(c.in), c.in == c.out);
    EXPECT_TRUE(serializes(valid_utf8(c.in)));
  }
}

TEST(CutUtf8, CutsAtTheLastCharacterBoundaryThatFitsWithItsMarker) {
  const std::string cjk = "数据加载";  // four 3-byte characters
  struct Case {
    size_t max;
    const char* marker;
    std::string out;
  };
  const Case cases[] = {
      {12, "...", "数据加载"},  // fits: unchanged, no marker
      {11, "...", "数据..."},   // 8 bytes of text left for the marker: two characters, not two and two thirds
      {10, "", "数据加"},
      {9, "", "数据加"},
      {8, "", "数据"},
      {2, "", ""},
      {2, "...", ""},  // a marker that does not fit is left out
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.max) + " " + c.marker);
    const std::string out = cut_utf8(cjk, c.max, c.marker);
    EXPECT_EQ(out, c.out);
    EXPECT_LE(out.size(), c.max);
    EXPECT_TRUE(is_valid_utf8(out));
  }
  // Invalid bytes are replaced before the cut: the limit holds for what is written.
  const std::string replaced = cut_utf8(std::string(10, '\xFF'), 10);
  EXPECT_EQ(replaced, kFffd + kFffd + kFffd);
}

// The Event recorder cut at byte 1021 whatever was there: a CJK message over 1 KB lost its Event two times in three
// (the cut fell inside a character, and the body could not be written). Every offset of the cut, as three jobs'
// names of different lengths give.
TEST(EventMessage, ACjkMessageOverOneKilobyteIsCutAtACharacterBoundaryAtEveryOffset) {
  std::string cjk;
  while (cjk.size() < 1500) cjk += "数据加载器的工作进程意外退出";
  for (const std::string prefix : {"", "x", "xy"}) {
    SCOPED_TRACE("prefix of " + std::to_string(prefix.size()) + " bytes");
    const std::string message = kube::event_message(prefix + cjk);
    EXPECT_TRUE(is_valid_utf8(message));
    EXPECT_LE(message.size(), kube::kMaxEventMessage);
    EXPECT_GE(message.size(), kube::kMaxEventMessage - 2 - 3);  // at most a character short
    EXPECT_EQ(message.substr(message.size() - 3), "...");
    EXPECT_EQ(message.substr(0, prefix.size()), prefix);
  }
  EXPECT_EQ(kube::event_message("short \xFF"), "short " + kFffd);
}

TEST(EventRecorder, RecordsAnEventWhoseMessageHeldInvalidBytesAndCjkPastTheLimit) {
  testing::FakeApi api;  // refuses a body that cannot be written as JSON, as the client does
  kube::EventRecorder recorder(api, "kubedist-operator");
  std::string cjk;
  while (cjk.size() < 1200) cjk += "显存不足";
  const kube::ObjectRef job{"kubedist.io/v1alpha1", "TrainingJob", "team-a", "resnet", "uid-1"};
  for (const std::string& message : {"x" + cjk, "xy" + cjk, std::string("stacks: b'\xE9\xFF'")}) {
    recorder.record(job, "Warning", "PodFailed", message);
  }
  const auto events = api.list("/api/v1/namespaces/team-a/events");
  ASSERT_EQ(events.size(), 3u);  // none lost
  for (const auto& e : events) EXPECT_TRUE(is_valid_utf8(e.at("message").get<std::string>()));
}

TEST(FirstLine, ReplacesInvalidBytesOfATerminationMessageAndCutsAtABoundary) {
  EXPECT_EQ(trainingjob::first_line("\nOOM in b'\xE9t\xE9'\nmore", 100), "OOM in b'" + kFffd + "t" + kFffd + "'");
  std::string cjk;
  while (cjk.size() < 2000) cjk += "错误";
  const std::string kept = trainingjob::first_line("x" + cjk, trainingjob::kMaxTerminationMessage);
  EXPECT_TRUE(is_valid_utf8(kept));
  EXPECT_EQ(kept.size(), trainingjob::kMaxTerminationMessage);  // 1 + 341 characters of 3 bytes
}

// The probe's hung worker: its Python stack holds bytes that are not UTF-8 (a bytes repr in a frame's source
// line). It gave no HangDetected Event and no lastFailure, only "API server unreachable: ... invalid UTF-8", 32 times.
TEST(HangStacks, InvalidBytesReachTheEventAndLastFailureAsReplacementCharacters) {
  using namespace trainingjob;
  const std::string stacks = "no step for 31 s (hang timeout 30 s): rank 1 on resnet-node-1 stuck 31 s at step 4 in "
                             "recv (train.py:40) [decode b'\xFF\xFE\x80' < main train.py:40]";
  contract::StatusReport status;
  status.round = 0;
  status.restarts = 1;
  status.restarts_by_cause = {{kRestartHang, 1}};
  status.nodes = 2;
  status.world_size = 16;
  status.phase = "running";
  status.run_id = "resnet";
  status.progress = contract::StatusProgress{};
  status.progress->step = 5;
  status.progress->hang_message = stacks;
  status.progress->hang_age_ms = 1000;
  // As node 0's launcher sends it (percent-escaped) and the poller reads it.
  const auto parsed = contract::parse_status_line(contract::encode_status_line(status));
  ASSERT_TRUE(parsed.report) << parsed.error;
  const LauncherReport report = launcher_report(*parsed.report, "pod-0");
  ASSERT_TRUE(report.progress);
  EXPECT_TRUE(is_valid_utf8(report.progress->hang_message));

  Observed o;
  PodFacts node0;
  node0.name = "resnet-node-0";
  node0.uid = "pod-0";
  node0.owner_uid = "uid-1";
  node0.phase = "Running";
  node0.rank = 0;
  PodFacts node1 = node0;
  node1.name = "resnet-node-1";
  node1.uid = "pod-1";
  node1.rank = 1;
  node1.node_name = "gpu-1";
  o.pods = {node0, node1};
  o.service_exists = true;
  o.launcher = report;
  const TrainingJob job = trainingjob::testing::example_job();
  DecideState s(job, o, 1'800'000'000);
  fold_launcher(s, &s.live[0]);

  ASSERT_EQ(s.plan.events.size(), 1u);
  EXPECT_EQ(s.plan.events[0].reason, "HangDetected");
  const std::string& message = s.plan.events[0].message;
  EXPECT_NE(message.find("decode b'" + kFffd + kFffd + kFffd + "'"), std::string::npos) << message;
  ASSERT_TRUE(s.plan.status.last_failure);
  EXPECT_EQ(s.plan.status.last_failure->reason, "Hang");
  EXPECT_EQ(s.plan.status.last_failure->pod, "resnet-node-1");
  EXPECT_TRUE(is_valid_utf8(s.plan.status.last_failure->message));
  EXPECT_NE(s.plan.status.last_failure->message.find(kFffd), std::string::npos);
  // The status patch that carries it can be written.
  EXPECT_NO_THROW((void)status_to_json(s.plan.status).dump());
}

// A listening socket on 127.0.0.1 that counts the connections made to it.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
    }
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd_); }
  int port() const { return port_; }
  int accepted() {
    int n = 0;
    for (int c; (c = ::accept(fd_, nullptr, nullptr)) >= 0; ++n) ::close(c);
    return n;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(ClientSend, ABodyThatCannotBeWrittenAsJsonIsItsOwnErrorNeverSentNorRetried) {
  Listener server;
  kube::Config config;
  config.server = "http://127.0.0.1:" + std::to_string(server.port());
  kube::RetryPolicy retry;
  retry.attempts = 5;
  retry.initial = std::chrono::milliseconds(300);  // retries would take over a second
  auto client = kube::Client::create(config, retry);
  ASSERT_TRUE(client.ok()) << client.error().message;
  const json patch = {{"status", {{"lastFailure", {{"message", "stuck in b'\xFF'"}}}}}};
  const auto start = std::chrono::steady_clock::now();
  auto r = (*client)->merge_patch("/apis/kubedist.io/v1alpha1/namespaces/team-a/trainingjobs/resnet/status", patch);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::kUnserializable);
  EXPECT_STREQ(to_string(r.error().kind), "Unserializable");
  EXPECT_EQ(r.error().message.find("unreachable"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("cannot be written as JSON"), std::string::npos) << r.error().message;
  EXPECT_LT(took, std::chrono::milliseconds(250));  // not retried
  EXPECT_EQ(server.accepted(), 0);                  // not sent
}

}  // namespace
}  // namespace kubedist
