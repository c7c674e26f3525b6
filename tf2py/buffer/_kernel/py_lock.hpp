// Buffer's lock: part of the binding (binding.cpp includes it once, inside its anonymous
// namespace).
#pragma once

// A re-entrant lock (threading.RLock's semantics, usable by threading.Condition) that the
// kernel can take without calling into Python: Buffer's lock. Blocking waits release the
// GIL.
class RLock {
  public:
    RLock() = default;
    ~RLock() {
        if (count_) mutex_.unlock();
    }
    RLock(const RLock&) = delete;
    RLock& operator=(const RLock&) = delete;

    // timeout in seconds (< 0: forever), as threading.RLock.acquire.
    bool acquire(bool blocking = true, double timeout = -1.0) {
        const unsigned long me = PyThread_get_thread_ident();
        if (count_ && owner_ == me) {
            ++count_;
            return true;
        }
        if (!take(blocking, timeout)) return false;
        owner_ = me;
        count_ = 1;
        return true;
    }

    void release() {
        if (!count_ || owner_ != PyThread_get_thread_ident())
            throw nb::builtin_exception(nb::exception_type::runtime_error, "cannot release un-acquired lock");
        if (--count_ == 0) {
            owner_ = 0;
            mutex_.unlock();
        }
    }

    bool is_owned() const { return count_ && owner_ == PyThread_get_thread_ident(); }

    // threading.Condition's protocol: give the lock up entirely while waiting, then restore.
    nb::tuple release_save() {
        if (!count_) throw nb::builtin_exception(nb::exception_type::runtime_error, "cannot release un-acquired lock");
        nb::tuple state = nb::make_tuple(count_, owner_);
        count_ = 0;
        owner_ = 0;
        mutex_.unlock();
        return state;
    }

    void acquire_restore(nb::tuple state) {
        const auto count = nb::cast<unsigned long>(state[0]);
        const auto owner = nb::cast<unsigned long>(state[1]);
        take(true, -1.0);
        count_ = count;
        owner_ = owner;
    }

  private:
    // The mutex itself; a blocking wait releases the GIL (the holder may need it).
    bool take(bool blocking, double timeout) {
        if (mutex_.try_lock()) return true;
        if (!blocking) return false;
        bool got = false;
        Py_BEGIN_ALLOW_THREADS
        if (timeout < 0) {
            mutex_.lock();
            got = true;
        } else {
            got = mutex_.try_lock_for(std::chrono::duration<double>(std::min(timeout, 1e9)));
        }
        Py_END_ALLOW_THREADS
        return got;
    }

    std::timed_mutex mutex_;
    unsigned long owner_ = 0;  // written and read with the GIL held
    unsigned long count_ = 0;
};
