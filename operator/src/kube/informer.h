// Informer<T>: a WatchStream feeding a Store<T> on its own thread, telling a callback what changed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/client.h"
#include "kube/lister.h"
#include "kube/store.h"
#include "kube/watch_stream.h"

namespace kubedist::kube {

using InformerOptions = WatchOptions;

// What a manager needs of any informer, whatever it caches.
class InformerBase {
 public:
  virtual ~InformerBase() = default;
  // Starts the thread; on_synced (may be empty) is called once, after the first complete list.
  virtual void start(std::function<void()> on_synced = {}) = 0;
  // Stops the thread; a watch in progress ends only when the server ends it or Client::cancel_watches() is called.
  virtual void stop() = 0;
  virtual bool synced() const = 0;
  // How late its watch loop is at now, if it is stuck (WatchStream::overdue); what it lists (for messages).
  virtual std::optional<std::chrono::milliseconds> overdue(Clock::TimePoint now) const = 0;
  virtual const std::string& path() const = 0;
};

// `on_change` gets the key and index value of every object that was added, changed or deleted (see Store).
template <typename T>
class Informer : public InformerBase, public Lister<T> {
 public:
  using Project = typename Store<T>::Project;
  using IndexOf = typename Store<T>::IndexOf;
  using OnChange = std::function<void(const std::string& key, const std::string& index)>;
  // Reads one watch line straight into the projection (without the JSON tree); nullopt when it is not JSON.
  using Decode = std::function<std::optional<DecodedEvent<T>>(std::string_view line)>;
  // Told of each object a DELETED event removes, as the event carries it, before the cache drops it: the one
  // sign of an object created and deleted again before anyone read the cache.
  using OnDeleted = std::function<void(const T& object)>;

  Informer(Client& client, InformerOptions options, Project project, IndexOf index_of, OnChange on_change)
      : store_(std::move(project), std::move(index_of)), stream_(client, std::move(options)),
        on_change_(std::move(on_change)) {}
  ~Informer() override { stop(); }

  void start(std::function<void()> on_synced = {}) override {
    on_synced_ = std::move(on_synced);
    thread_ = std::jthread([this](std::stop_token stop) { stream_.run(stop, sink()); });
  }
  void stop() override {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }
  bool synced() const override { return synced_; }
  std::optional<std::chrono::milliseconds> overdue(Clock::TimePoint now) const override { return stream_.overdue(now); }
  const std::string& path() const override { return stream_.path(); }
  uint64_t relists() const { return relists_; }
  // Watch events are read by decode, and the objects of a list by decode_item (the text of one object, decoded as an
  // ADDED event's), instead of being parsed and projected. Call before start().
  void set_decoder(Decode decode, Decode decode_item) {
    decode_ = std::move(decode);
    decode_item_ = std::move(decode_item);
  }
  // Call before start().
  void set_on_deleted(OnDeleted on_deleted) { on_deleted_ = std::move(on_deleted); }

  std::optional<T> get(const std::string& key) const override { return store_.get(key); }
  std::vector<T> by_index(const std::string& index) const override { return store_.by_index(index); }
  std::vector<std::string> keys() const override { return store_.keys(); }

 private:
  WatchStream::Sink sink() {
    WatchStream::Sink sink{
        [this](const nlohmann::json& item) {
          if (auto projected = store_.project(item)) fresh_.emplace(object_key(item), std::move(*projected));
        },
        [this](bool complete) {
          if (!complete) {
            fresh_.clear();
            return;
          }
          const auto changes = store_.replace(std::move(fresh_));
          fresh_.clear();
          ++relists_;
          if (!synced_.exchange(true) && on_synced_) on_synced_();
          for (const auto& c : changes) on_change_(c.key, c.index);
        },
        [this](const WatchEvent& event) {
          if (on_deleted_ && event.type == WatchEvent::Type::kDeleted) {
            if (auto gone = store_.project(event.object)) on_deleted_(*gone);
          }
          auto applied = store_.apply(event);
          if (applied.change) on_change_(applied.change->key, applied.change->index);
          return applied.next;
        },
        {},
        {},
    };
    if (decode_item_) {
      sink.listed_text = [this](std::string_view item) {
        std::optional<DecodedEvent<T>> decoded = decode_item_(item);
        if (decoded && decoded->projected) fresh_.emplace(std::move(decoded->key), std::move(*decoded->projected));
      };
    }
    if (decode_) {
      sink.line = [this](const std::string& line) -> std::optional<std::pair<WatchEvent, AfterEvent>> {
        std::optional<DecodedEvent<T>> decoded = decode_(line);
        if (!decoded) return std::nullopt;
        if (on_deleted_ && decoded->event.type == WatchEvent::Type::kDeleted && decoded->projected) {
          on_deleted_(*decoded->projected);
        }
        auto applied = store_.apply_projected(decoded->event, decoded->key, std::move(decoded->projected));
        if (applied.change) on_change_(applied.change->key, applied.change->index);
        return std::pair(std::move(decoded->event), applied.next);
      };
    }
    return sink;
  }

  Store<T> store_;
  WatchStream stream_;
  const OnChange on_change_;
  std::function<void()> on_synced_;
  Decode decode_;
  Decode decode_item_;
  OnDeleted on_deleted_;
  std::map<std::string, T> fresh_;  // the relist in progress (the stream's thread only)
  std::atomic<bool> synced_{false};
  std::atomic<uint64_t> relists_{0};
  std::jthread thread_;
};

}  // namespace kubedist::kube
