// Integration: what the act layer asks of an integration (gang scheduling, Kueue admission, ...): the kinds it
// watches, and its facts about a job from those caches (hook.h says what decide() asks of them). Each is registered
// with one line (act/setup.cc); the act layer knows none by name.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainingjob/api/job_state.h"
#include "trainingjob/api/types.h"
#include "trainingjob/decide/hook.h"

namespace kubedist::trainingjob {

// The facts kept of one watched object of a kind only an integration knows (a PodGroup, a Kueue Workload): a value
// of the integration's own type behind a handle the act layer's caches can hold. Equal facts compare equal, so an
// object that changed in a field nobody reads wakes no job.
class AnyFacts {
 public:
  AnyFacts() = default;
  template <typename T>
  explicit AnyFacts(T value) : held_(std::make_shared<const Held<T>>(std::move(value))) {}

  // The value when it is a T, else null.
  template <typename T>
  const T* as() const {
    const auto* held = dynamic_cast<const Held<T>*>(held_.get());
    return held != nullptr ? &held->value : nullptr;
  }
  bool operator==(const AnyFacts& o) const {
    return held_ == o.held_ || (held_ != nullptr && o.held_ != nullptr && held_->equals(*o.held_));
  }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual bool equals(const Base& o) const = 0;
  };
  template <typename T>
  struct Held final : Base {
    explicit Held(T v) : value(std::move(v)) {}
    bool equals(const Base& o) const override {
      const auto* other = dynamic_cast<const Held*>(&o);
      return other != nullptr && other->value == value;
    }
    T value;
  };
  std::shared_ptr<const Base> held_;
};

// A kind an integration watches: which objects, how one is read, and which job a change concerns.
struct WatchSpec {
  std::string resource;        // its plural ("podgroups"): the name Caches knows it by, and in messages
  std::string path;            // the collection listed and watched: /apis/G/V[/namespaces/NS]/<resource>
  std::string label_selector;  // "" = every object
  std::function<AnyFacts(const nlohmann::json&)> parse;
  // The key ("namespace/name") of the job an object belongs to, which a change queues; null: a change may concern
  // any job, and every job is queued.
  std::function<std::string(const AnyFacts&)> job_key;

  // A watch of T, read by parse; job_key null as above.
  template <typename T>
  static WatchSpec of(std::string resource, std::string path, std::string label_selector,
                      T (*parse)(const nlohmann::json&), std::string (*job_key)(const T&) = nullptr) {
    WatchSpec w{std::move(resource), std::move(path), std::move(label_selector),
                [parse](const nlohmann::json& obj) { return AnyFacts(parse(obj)); }, nullptr};
    if (job_key != nullptr) {
      w.job_key = [job_key](const AnyFacts& f) { return f.as<T>() != nullptr ? job_key(*f.as<T>()) : std::string(); };
    }
    return w;
  }
};

// What an integration's watched kinds hold, as its observe() reads them.
class Caches {
 public:
  virtual ~Caches() = default;
  // The object of `resource` (one of the integration's WatchSpecs) with key "namespace/name" (or "name").
  virtual std::optional<AnyFacts> get(const std::string& resource, const std::string& key) const = 0;
  // Every object of a resource whose WatchSpec has no job_key.
  virtual std::vector<AnyFacts> all(const std::string& resource) const = 0;

  template <typename T>
  std::optional<T> get_as(const std::string& resource, const std::string& key) const {
    auto f = get(resource, key);
    if (!f || f->as<T>() == nullptr) return std::nullopt;
    return *f->as<T>();
  }
  template <typename T>
  std::vector<T> all_as(const std::string& resource) const {
    std::vector<T> out;
    for (const auto& f : all(resource)) {
      if (const T* t = f.as<T>()) out.push_back(*t);
    }
    return out;
  }
};

// The resources the API server serves at a group version ("/apis/G/V"); nullopt when it serves none there.
using ServedResources = std::function<std::optional<std::vector<std::string>>(const std::string& group_version_path)>;

// What the kinds an integration watches need, or why it cannot work in this cluster.
struct Watches {
  std::vector<WatchSpec> kinds;
  std::string unavailable;  // non-empty: why not (its API is not served); nothing is watched
  bool warn = true;         // log that as a warning; false: as information (an add-on simply not installed)
};

class Integration {
 public:
  virtual ~Integration() = default;

  // The kinds to watch in namespace ns ("" = all), given what the cluster serves. The act layer also checks that the
  // operator may list each; if it may not, the integration watches nothing and observes without caches.
  virtual Watches watches(const std::string& ns, const ServedResources& served) const = 0;
  // What it means for jobs when the integration cannot work here, logged after the reason.
  virtual std::string without() const = 0;
  // What it found to work through, logged once its kinds are watched ("": nothing to say).
  virtual std::string found() const { return ""; }
  // The condition types it keeps on jobs (the status reader keeps them).
  virtual std::vector<ConditionType> condition_types() const = 0;
  // Its facts about a job, from its caches (null: it cannot work here); null when the job does not concern it.
  virtual std::shared_ptr<const IntegrationFacts> observe(const TrainingJob& job, const Caches* caches) const = 0;
};

}  // namespace kubedist::trainingjob
