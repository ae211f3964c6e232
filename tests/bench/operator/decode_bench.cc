// decode-bench (not a test; never run by ctest): what decoding one watch event costs the operator, for a Running
// pod of a job (events/pod_running.json) and a TrainingJob with status (events/trainingjob_running.json), each
// decoded the way its informer does it. Prints events per CPU second of the bench's thread (the median of --runs
// runs of --events events; CPU time, because the cores are shared with other work), the microseconds one event
// takes, and the bytes and allocations operator new served per event (counted by the replacement below, in this
// binary only).
//
//   build/tests/bench/operator/decode-bench [--runs N] [--events N] [--events-dir DIR]

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/watch_event.h"
#include "trainingjob/api/facts.h"
#include "trainingjob/api/parse_spec.h"
#include "trainingjob/api/pod_event.h"

namespace {

// Counted only while `counting`: the bench is single-threaded.
bool counting = false;
size_t alloc_count = 0;
size_t alloc_bytes = 0;

void* allocate(std::size_t n) {
  if (counting) {
    ++alloc_count;
    alloc_bytes += n;
  }
  return std::malloc(n == 0 ? 1 : n);
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using nlohmann::json;
using namespace kubedist;

// Keeps the compiler from dropping work whose result is unused.
volatile size_t sink = 0;

// nlohmann's SAX parser with a handler that keeps nothing: the least reading a pod event through nlohmann's lexer
// costs (the pod informer's reading before common/json_reader.h did as much, and kept the facts).
struct NoSax {
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) { return true; }
  bool string(json::string_t&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) { return true; }
  bool key(json::string_t&) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }
};

struct Case {
  std::string name;
  size_t input_bytes;
  std::function<void()> decode_one;
};

struct Figures {
  double events_per_s;
  double bytes_per_event;
  double allocs_per_event;
};

// This thread's CPU time: the machine's cores are shared, and time other processes take from us is not ours.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Figures measure(const Case& c, int runs, int events) {
  for (int i = 0; i < events / 10 + 1; ++i) c.decode_one();  // warm up caches and the allocator
  alloc_count = alloc_bytes = 0;
  counting = true;
  for (int i = 0; i < 100; ++i) c.decode_one();
  counting = false;
  const double allocs = static_cast<double>(alloc_count) / 100, bytes = static_cast<double>(alloc_bytes) / 100;
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) {
    const double t0 = thread_cpu_seconds();
    for (int i = 0; i < events; ++i) c.decode_one();
    rates.push_back(events / (thread_cpu_seconds() - t0));
  }
  std::sort(rates.begin(), rates.end());
  const size_t n = rates.size();
  const double median = n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
  return {median, bytes, allocs};
}

// A fixture, as the API server sends it: one line of compact JSON.
std::string load_event(const std::string& dir, const std::string& file) {
  std::ifstream in(dir + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  const json parsed = json::parse(text.str(), nullptr, false);
  if (!in || parsed.is_discarded()) {
    std::fprintf(stderr, "decode-bench: cannot read %s/%s as JSON\n", dir.c_str(), file.c_str());
    std::exit(2);
  }
  return parsed.dump();
}

int positive(const char* flag, const char* value) {
  char* end = nullptr;
  const long v = value ? std::strtol(value, &end, 10) : 0;
  if (!value || *end != '\0' || v < 1 || v > 100000000) {
    std::fprintf(stderr, "decode-bench: %s needs a positive number, got '%s'\n", flag, value ? value : "");
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 7;
  int events = 20000;
  std::string dir = KUBEDIST_BENCH_EVENTS_DIR;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--runs") {
      runs = positive("--runs", next);
      ++i;
    } else if (a == "--events") {
      events = positive("--events", next);
      ++i;
    } else if (a == "--events-dir" && next) {
      dir = next;
      ++i;
    } else {
      std::fprintf(stderr, "usage: decode-bench [--runs N] [--events N] [--events-dir DIR]\n");
      return 2;
    }
  }
  const std::string pod_line = load_event(dir, "pod_running.json");
  const std::string job_line = load_event(dir, "trainingjob_running.json");
  const json pod_event = json::parse(pod_line);
  const json job_event = json::parse(job_line);

  // The pod informer before issue 25 (and every other informer): Client::watch parses the line, WatchStream reads
  // the event, Store::apply projects the object (parse_pod_facts) and keys it.
  auto pod_dom = [&] {
    json raw = json::parse(pod_line, nullptr, false);
    const kube::WatchEvent event = kube::WatchEvent::parse(std::move(raw));
    const trainingjob::PodFacts facts = trainingjob::parse_pod_facts(event.object);
    const std::string key = kube::object_key(event.object);
    sink = sink + facts.name.size() + key.size() + event.resource_version.size();
  };
  // The TrainingJob informer: the same with parse_training_job.
  auto job_dom = [&] {
    json raw = json::parse(job_line, nullptr, false);
    const kube::WatchEvent event = kube::WatchEvent::parse(std::move(raw));
    auto job = trainingjob::parse_training_job(event.object);
    const std::string key = kube::object_key(event.object);
    sink = sink + (job ? job->name.size() : 0) + key.size();
  };

  // The same pod event read straight into its facts, every other field skipped unread (api/pod_event.h, what the pod
  // informer does); it must agree with the DOM path.
  {
    trainingjob::PodEvent read;
    const kube::WatchEvent dom = kube::WatchEvent::parse(pod_event);
    if (!trainingjob::read_pod_event(pod_line, read) || kube::WatchEvent::type_of(read.type) != dom.type ||
        read.key != kube::object_key(dom.object) ||
        read.resource_version != dom.resource_version || !(read.facts == trainingjob::parse_pod_facts(dom.object))) {
      std::fprintf(stderr, "decode-bench: the reading of the pod event differs from the DOM reading\n");
      return 1;
    }
  }
  auto pod_read = [&] {
    trainingjob::PodEvent event;
    trainingjob::read_pod_event(pod_line, event);
    sink = sink + event.facts.name.size() + event.key.size() + event.resource_version.size();
  };

  std::vector<Case> cases = {
      {"pod: parse + WatchEvent + facts + key", pod_line.size(), pod_dom},
      {"pod:   json::parse alone", pod_line.size(),
       [&] { sink = sink + json::parse(pod_line, nullptr, false).size(); }},
      {"pod:   copy of the parsed event", pod_line.size(),
       [&] {
         const json copy = pod_event;
         sink = sink + copy.size();
       }},
      {"pod:   parse_pod_facts alone", pod_line.size(),
       [&] { sink = sink + trainingjob::parse_pod_facts(pod_event["object"]).name.size(); }},
      {"pod: nlohmann's SAX, a handler that keeps nothing", pod_line.size(),
       [&] {
         NoSax none;
         sink = sink + json::sax_parse(pod_line, &none);
       }},
      {"pod: read into facts + key, the rest skipped (the informer)", pod_line.size(), pod_read},
      {"job: parse + WatchEvent + job + key", job_line.size(), job_dom},
      {"job:   json::parse alone", job_line.size(),
       [&] { sink = sink + json::parse(job_line, nullptr, false).size(); }},
      {"job:   parse_training_job alone", job_line.size(),
       [&] {
         auto job = trainingjob::parse_training_job(job_event["object"]);
         sink = sink + (job ? job->name.size() : 0);
       }},
  };

  std::printf("decode-bench: one watch event decoded as the informers do; events per CPU second, median of %d runs of "
              "%d events\n", runs,
              events);
  std::printf("  %-58s %8s %12s %10s %14s %13s\n", "", "bytes in", "events/s", "us/event", "bytes alloc'd",
              "allocations");
  for (const Case& c : cases) {
    const Figures f = measure(c, runs, events);
    std::printf("  %-58s %8zu %12.0f %10.2f %14.0f %13.1f\n", c.name.c_str(), c.input_bytes, f.events_per_s,
                1e6 / f.events_per_s, f.bytes_per_event, f.allocs_per_event);
  }
  return 0;
}
