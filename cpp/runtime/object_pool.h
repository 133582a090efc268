// A thread-safe pool of reusable objects (the executor's per-run arenas): a caller leases one,
// uses it alone, and the lease puts it back. New objects are made only when every pooled one is
// leased, so a steady state with K concurrent callers allocates nothing.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace npuc {

template <typename T>
class ObjectPool {
 public:
  using Factory = std::function<std::unique_ptr<T>()>;

  // Returns its object to the pool when destroyed (also when the user's code throws).
  class Lease {
   public:
    Lease(ObjectPool& pool, std::unique_ptr<T> obj) : pool_(pool), obj_(std::move(obj)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_.release(std::move(obj_)); }
    T& operator*() const { return *obj_; }
    T* operator->() const { return obj_.get(); }

   private:
    ObjectPool& pool_;
    std::unique_ptr<T> obj_;
  };

  explicit ObjectPool(Factory make) : make_(std::move(make)) {}

  Lease acquire() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<T> obj = std::move(free_.back());
        free_.pop_back();
        return Lease(*this, std::move(obj));
      }
    }
    return Lease(*this, make_());  // made outside the lock: it may be a large allocation
  }

  // Objects currently idle in the pool.
  size_t idle() const {
    std::lock_guard<std::mutex> lock(mu_);
    return free_.size();
  }

 private:
  void release(std::unique_ptr<T> obj) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(obj));
  }

  Factory make_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<T>> free_;
};

}  // namespace npuc
