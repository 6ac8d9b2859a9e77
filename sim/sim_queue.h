// An unbounded FIFO between simulated actors (the mp.Queue of the DataLoader). Cooperative scheduling
// in SimGrid means no locking is needed around the deque; the semaphore counts items and blocks Pop.
#pragma once

#include <deque>
#include <utility>

#include <simgrid/s4u/Semaphore.hpp>

namespace simreplay::sim {

template <typename T>
class SimQueue {
 public:
  SimQueue() : available_(simgrid::s4u::Semaphore::create(0)) {}
  void Push(T item) {
    items_.push_back(std::move(item));
    available_->release();
  }
  T Pop() {
    available_->acquire();
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }
  size_t size() const { return items_.size(); }

 private:
  std::deque<T> items_;
  simgrid::s4u::SemaphorePtr available_;
};

}  // namespace simreplay::sim
