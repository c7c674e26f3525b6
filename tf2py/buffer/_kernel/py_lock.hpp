// The kernel's own lock: part of the binding (binding.cpp includes it once, inside its
// anonymous namespace).
#pragma once

// Readers share it, writers hold it alone; batch lookups and batch inserts hold it with the
// GIL released, so other threads run (and other batch lookups read) meanwhile.
//
// The single-call fast paths keep the GIL and skip the mutex while no section holds it
// (holders_ == 0): no other thread can start one without the GIL, which they hold, so they
// are alone with the kernel already. That is only true while they run no Python code (which
// may hand the GIL over): every Access scope below is plain C++, Python objects are built
// after it ends. The same rule keeps the lock deadlock-free: no thread waits for the GIL while
// another waits for the mutex holding the GIL (a blocked acquisition releases the GIL first).
// A free-threaded build (Py_GIL_DISABLED) always takes the mutex.
class KernelLock {
  public:
    bool idle() const { return holders_.load(std::memory_order_acquire) == 0; }

  private:
    template <bool Exclusive>
    friend class Access;
    std::shared_mutex mutex_;
    std::atomic<int> holders_{0};  // sections holding (or waiting for) mutex_
};

// The thread that imported the module's interpreter runs its exit (threading.main_thread()).
unsigned long g_main_thread = 0;

// Set once by mark_exiting (the atexit hook the module registers), under g_exit_mutex.
std::mutex g_exit_mutex;
bool g_exiting = false;

// The kernel mutex this thread holds in an Access scope (nullptr: none), and how. A thread
// parked at exit (take_gil_back) lets it go: its section's work is done, and the exit's own
// calls into the kernel (atexit hooks run after the module's, finalizers) would otherwise wait
// forever for a thread that never runs again.
struct HeldLock {
    std::shared_mutex* mutex = nullptr;
    bool exclusive = false;
};
thread_local HeldLock t_held;

// Takes the GIL back after a section without it. While the interpreter exits, CPython before
// 3.14 ends any other thread that asks for the GIL (pthread_exit), unwinding C++ frames that
// cannot be unwound (WithoutGil's destructor), which aborts the whole process ("terminate
// called without an active exception"): a daemon thread inside a batch at exit. Such a thread
// waits for the exit instead, as CPython 3.14 makes it wait itself. Checking "is it exiting"
// and then asking for the GIL would race with the exit's start, so the check and the request
// happen under g_exit_mutex, which the atexit hook takes (without the GIL) to say "exiting":
// atexit runs before CPython marks itself finalizing, so a thread that saw "not exiting" is
// given the GIL before the exit can begin.
inline void take_gil_back(PyThreadState* state) {
#if PY_VERSION_HEX < 0x030E0000
    if (PyThread_get_thread_ident() != g_main_thread) {
        std::unique_lock<std::mutex> guard(g_exit_mutex);
#if PY_VERSION_HEX >= 0x030D0000
        const bool finalizing = Py_IsFinalizing();
#else
        const bool finalizing = _Py_IsFinalizing();
#endif
        if (g_exiting || finalizing) {  // (finalizing: an exit whose atexit hooks did not run)
            guard.unlock();
            if (t_held.mutex) t_held.exclusive ? t_held.mutex->unlock() : t_held.mutex->unlock_shared();
            for (;;) pause();
        }
        PyEval_RestoreThread(state);
        return;
    }
#endif
    PyEval_RestoreThread(state);
}

// The atexit hook (called with the GIL): from now on no thread coming back from a section
// without the GIL asks for it. Waits, without the GIL, for any thread between its check and
// its GIL request.
inline void mark_exiting() {
    PyThreadState* state = PyEval_SaveThread();
    {
        std::lock_guard<std::mutex> guard(g_exit_mutex);
        g_exiting = true;
    }
    PyEval_RestoreThread(state);
}

// Access to the kernel for one scope, called with the GIL held. Shared (Exclusive = false)
// for queries, exclusive for inserts and clear(). always: take the mutex even when idle (a
// scope that releases the GIL inside).
template <bool Exclusive>
class Access {
  public:
    explicit Access(KernelLock& lock, bool always = false) : lock_(lock) {
#ifndef Py_GIL_DISABLED
        if (!always && lock.idle()) return;
#endif
        taken_ = true;
        lock.holders_.fetch_add(1, std::memory_order_acq_rel);
        outer_ = t_held;
        if (Exclusive ? lock.mutex_.try_lock() : lock.mutex_.try_lock_shared()) {
            t_held = HeldLock{&lock.mutex_, Exclusive};
            return;
        }
        PyThreadState* state = PyEval_SaveThread();  // never wait for the mutex holding the GIL
        if (Exclusive) {
            lock.mutex_.lock();
        } else {
            lock.mutex_.lock_shared();
        }
        t_held = HeldLock{&lock.mutex_, Exclusive};
        take_gil_back(state);
    }

    ~Access() {
        if (!taken_) return;
        t_held = outer_;
        if (Exclusive) {
            lock_.mutex_.unlock();
        } else {
            lock_.mutex_.unlock_shared();
        }
        lock_.holders_.fetch_sub(1, std::memory_order_acq_rel);
    }

    Access(const Access&) = delete;
    Access& operator=(const Access&) = delete;

  private:
    KernelLock& lock_;
    bool taken_ = false;
    HeldLock outer_;  // t_held before this scope
};

using Reading = Access<false>;
using Writing = Access<true>;

// Runs the scope without the GIL when `release` (a batch large enough to repay the switch).
class WithoutGil {
  public:
    explicit WithoutGil(bool release) : state_(release ? PyEval_SaveThread() : nullptr) {}
    ~WithoutGil() {
        if (state_) take_gil_back(state_);
    }
    WithoutGil(const WithoutGil&) = delete;
    WithoutGil& operator=(const WithoutGil&) = delete;

  private:
    PyThreadState* state_;
};

// Batches at least this long run without the GIL (below it, the switch costs more than the
// other threads gain).
constexpr size_t kReleaseGilRows = 64;
