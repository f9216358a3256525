// nanobind module `stcsim._engine`: a thin binding of stc::Engine. Python orchestrates, C++ computes.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>

#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <mutex>

#include <pthread.h>

#include "../engine.h"
#include "../ptx/errors.h"
#include "../stats.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using Bytes = nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

std::array<uint32_t, 3> dims(const std::vector<int64_t>& v, const char* what) {
  if (v.empty() || v.size() > 3) throw stc::LaunchError(std::string(what) + " must have 1 to 3 dimensions");
  std::array<uint32_t, 3> d = {1, 1, 1};
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] <= 0 || v[i] > INT32_MAX) throw stc::LaunchError(std::string(what) + " dimensions must be positive and below 2^31, got " + std::to_string(v[i]));
    d[i] = static_cast<uint32_t>(v[i]);
  }
  return d;
}

// One kernel argument: a Python int (bool included) or float; the Python layer (stcsim.sim) has already
// turned numpy scalars into these. Integers outside [-2^63, 2^64) are kept as text for the error message.
stc::KernelArg kernel_arg(nb::handle a, size_t i) {
  if (nb::isinstance<nb::bool_>(a)) return static_cast<int64_t>(nb::cast<bool>(a));
  if (nb::isinstance<nb::int_>(a)) {
    int64_t s = 0;
    uint64_t u = 0;
    if (nb::try_cast(a, s)) return s;
    if (nb::try_cast(a, u)) return u;
    return stc::OutOfRangeInt{nb::str(a).c_str()};
  }
  if (nb::isinstance<nb::float_>(a)) return nb::cast<double>(a);
  if (nb::isinstance<nb::bytes>(a)) {
    const nb::bytes b = nb::borrow<nb::bytes>(a);
    const auto* p = static_cast<const uint8_t*>(static_cast<const void*>(b.c_str()));
    return stc::ByteArg{std::vector<uint8_t>(p, p + b.size())};
  }
  throw stc::LaunchError("kernel argument " + std::to_string(i) + " must be an int, a float or bytes, got " +
                         std::string(nb::type_name(a.type()).c_str()));
}

// True once the interpreter finalizes: from then on CPython ends any other thread that takes the GIL
// (PyThread_exit_thread, a forced unwind), which inside nanobind's noexcept GIL guards is std::terminate.
bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// The launches running in this process, so that interpreter exit can stop them and wait until each has
// returned into Python (stop_launches): a launch left running on another thread would take the GIL after
// finalization began. Allocated at load (and anew in a forked child) and never freed: a parked launch thread
// (GilRelease) may still use it while static destructors run at process exit.
struct Launches {
  std::mutex m;
  std::condition_variable ended;
  size_t running = 0;
  std::atomic<bool> stopping{false};  // the interpreter is exiting: running launches stop, new ones are refused
};

Launches* all_launches = new Launches;

Launches& launches() { return *all_launches; }

// A child process forked while launches ran on other threads has none of those threads (and may have
// copied the mutex locked): it starts with no launches, or its exit would wait for launches that do not exist.
void forget_launches_in_child() { all_launches = new Launches; }

// Counts one launch while it runs; made and destroyed with the GIL held, so that once `running` is back to
// 0 no launch thread still has to take the GIL in C++.
class LaunchCount {
 public:
  explicit LaunchCount(const std::string& kernel) {
    Launches& l = launches();
    if (l.stopping.load()) {
      PyErr_SetString(PyExc_SystemExit, ("stcsim: launch of kernel '" + kernel +
                                         "' refused: the interpreter is exiting").c_str());
      throw nb::python_error();
    }
    std::lock_guard lock(l.m);
    ++l.running;
  }
  ~LaunchCount() {
    Launches& l = launches();
    std::lock_guard lock(l.m);
    --l.running;
    l.ended.notify_all();
  }
  LaunchCount(const LaunchCount&) = delete;
  LaunchCount& operator=(const LaunchCount&) = delete;
};

// Releases the GIL for the launch. Taking it back once the interpreter finalizes would end the thread
// inside a noexcept destructor (std::terminate): a launch thread that stop_launches gave up waiting for
// parks instead, until the process exits.
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  ~GilRelease() {
    if (interpreter_finalizing()) {
      std::mutex m;
      std::unique_lock lock(m);
      std::condition_variable never;
      never.wait(lock, [] { return false; });
    }
    PyEval_RestoreThread(state_);
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

// At interpreter exit (an atexit handler: after non-daemon threads were joined, before finalization) the
// running launches stop at their next poll (within ~10 ms) and raise SystemExit in their threads, which
// ends a thread quietly; this waits until every one has returned into Python.
void stop_launches() {
  Launches& l = launches();
  l.stopping.store(true);
  // A daemon thread still alive is frozen by finalization with whatever it holds (an engine, a bound
  // launch): CPython leaks that by design, and nanobind would report it as leaked instances.
  for (nb::handle t : nb::module_::import_("threading").attr("enumerate")())
    if (nb::cast<bool>(t.attr("daemon"))) nb::set_leak_warnings(false);
  nb::gil_scoped_release release;
  std::unique_lock lock(l.m);
  l.ended.wait_for(lock, std::chrono::seconds(30), [&l] { return l.running == 0; });
}

// Polled by the launch every few milliseconds: stops it when the interpreter is exiting (`exiting` says so
// afterwards); otherwise takes the GIL and runs the Python signal handlers, a pending KeyboardInterrupt (or
// any exception a handler raised) stays set and stops the launch.
bool stop_requested(bool& exiting) {
  if (launches().stopping.load() || interpreter_finalizing()) {
    exiting = true;
    return true;
  }
  nb::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

stc::StatMap launch(stc::Engine& e, const std::string& kernel, const std::vector<int64_t>& grid,
                  const std::vector<int64_t>& block, const nb::list& args, int64_t shared_bytes, bool timing,
                  int64_t regs_per_thread, uint64_t max_cycles, uint64_t max_warp_insts, double sample,
                  uint64_t max_ctas, bool serialize_wgmma, int64_t threads, bool lockstep, bool skip_mma_values) {
  stc::LaunchRequest r;
  r.kernel = kernel;
  const auto g = dims(grid, "grid"), b = dims(block, "block");
  for (int i = 0; i < 3; ++i) { r.grid[i] = g[static_cast<size_t>(i)]; r.block[i] = b[static_cast<size_t>(i)]; }
  if (shared_bytes < 0) throw stc::LaunchError("shared_bytes must be >= 0");
  r.dynamic_shared = static_cast<uint64_t>(shared_bytes);
  r.timing = timing;
  if (regs_per_thread < 0 || regs_per_thread > 255) throw stc::LaunchError("regs_per_thread must be in [0, 255]");
  r.regs_per_thread = static_cast<uint32_t>(regs_per_thread);
  if (!(sample >= 0 && sample < 1)) throw stc::LaunchError("sample must be in [0, 1) (0: full detail)");
  r.sample = sample;
  r.limits = {max_cycles, max_warp_insts, max_ctas};
  r.serialize_wgmma = serialize_wgmma;
  if (threads < 1 || threads > 1024) throw stc::LaunchError("threads must be in [1, 1024]");
  r.threads = static_cast<uint32_t>(threads);
  r.lockstep = lockstep;
  r.skip_mma_values = skip_mma_values;
  bool exiting = false;
  r.interrupt = [&exiting] { return stop_requested(exiting); };
  for (size_t i = 0; i < args.size(); ++i) r.args.push_back(kernel_arg(args[i], i));
  const LaunchCount running(kernel);
  try {
    const GilRelease release;
    return e.launch(r);
  } catch (const stc::Interrupted&) {
    if (exiting)
      PyErr_SetString(PyExc_SystemExit, ("stcsim: launch of kernel '" + kernel +
                                         "' stopped: the interpreter is exiting").c_str());
    throw nb::python_error();  // that, or the exception the signal handler left pending (KeyboardInterrupt)
  }
}

}  // namespace

NB_MODULE(_engine, m) {
  m.doc() = "The stcsim C++ simulator engine.";
  nb::exception<stc::PtxError>(m, "PtxError", PyExc_ValueError);
  nb::exception<stc::LaunchError>(m, "LaunchError", PyExc_ValueError);
  nb::exception<stc::SimFault>(m, "SimFault", PyExc_RuntimeError);
  nb::exception<stc::WatchdogError>(m, "WatchdogError", m.attr("SimFault").ptr());

  nb::class_<stc::SassFacts>(m, "SassFacts",
                             "What ptxas's SASS says of a kernel's schedule (stcsim.sim.sass_facts): its copy "
                             "grouping, each innermost loop's order and loads' scoreboard waits, the order of "
                             "its straight-line copy blocks.")
      .def(nb::init<>())
      .def_rw("copy_group", &stc::SassFacts::copy_group)
      .def_rw("loops", &stc::SassFacts::loops)
      .def_rw("copy_blocks", &stc::SassFacts::copy_blocks)
      .def_rw("loop_waits", &stc::SassFacts::loop_waits);
  nb::class_<stc::Engine>(m, "Engine")
      .def(nb::init<bool, bool>(), "schedule_loads"_a = true, "memcheck"_a = false,
           "schedule_loads: hoist loads within basic blocks as ptxas does (False: execute PTX order); "
           "memcheck: red zones around allocations, so overruns fault")
      .def_prop_ro("memcheck", [](stc::Engine& e) { return e.memory().memcheck(); })
      .def("malloc", [](stc::Engine& e, int64_t n) {
            if (n < 0) throw stc::LaunchError("malloc size must be >= 0");
            return e.memory().malloc(static_cast<uint64_t>(n));
          }, "nbytes"_a, "Allocates zeroed device memory; returns its address.")
      .def("free", [](stc::Engine& e, uint64_t a) {
            if (!e.memory().free(a)) throw stc::LaunchError("free of an address that is not an allocation");
          }, "addr"_a)
      .def("copy_to", [](stc::Engine& e, uint64_t addr, Bytes b) { e.copy_to(addr, b.data(), b.size()); },
           "addr"_a, "data"_a, "Copies host bytes to device memory.")
      .def("copy_from", [](stc::Engine& e, uint64_t addr, Bytes b) { e.copy_from(addr, b.data(), b.size()); },
           "addr"_a, "out"_a, "Copies device memory into a writable host byte buffer.")
      .def("load_ptx", [](stc::Engine& e, const nb::bytes& text, const std::string& file,
                          const std::map<std::string, stc::SassFacts>& sass) {
            return e.load_ptx(std::string(text.c_str(), text.size()), file, sass);
          }, "text"_a, "file"_a, "sass"_a = std::map<std::string, stc::SassFacts>{},
          "Parses and links PTX given as bytes (any byte a token cannot hold is a PtxError); sass: per kernel "
          "name, what ptxas's SASS says of its schedule (SassFacts).")
      .def("load_ptx", [](stc::Engine& e, const std::string& text, const std::string& file,
                          const std::map<std::string, stc::SassFacts>& sass) {
            return e.load_ptx(text, file, sass);
          }, "text"_a, "file"_a, "sass"_a = std::map<std::string, stc::SassFacts>{},
           "Parses and links PTX; returns the entry kernel names.")
      .def("kernel_names", &stc::Engine::kernel_names)
      .def("mma_values_note", [](const stc::Engine& e, const std::string& name) { return e.kernel(name).mma_values_note; },
           "Where a Tensor Core result of the kernel reaches the timing ('': nowhere; func/value_flow.h).")
      .def("kernel_code", [](const stc::Engine& e, const std::string& name) {
            std::vector<std::tuple<std::string, int32_t, bool>> out;
            for (const auto& in : e.kernel(name).code) out.emplace_back(in.text, in.target, in.unrolled);
            return out;
          }, "name"_a, "A loaded kernel's instructions as scheduled: (text as written, branch target pc or -1, "
          "in an unrolled loop body).")
      .def("bytes_allocated", [](stc::Engine& e) { return e.memory().bytes_allocated(); })
      .def("set_config", [](stc::Engine& e, const nb::dict& d) {
            stc::FlatConfig f;
            for (auto [k, v] : d) {
              const std::string key = nb::cast<std::string>(k);
              if (nb::isinstance<nb::str>(v)) f[key] = nb::cast<std::string>(v);
              else if (nb::isinstance<nb::bool_>(v)) f[key] = nb::cast<bool>(v) ? 1.0 : 0.0;
              else if (nb::isinstance<nb::int_>(v) || nb::isinstance<nb::float_>(v)) f[key] = nb::cast<double>(v);
              else f[key] = std::string(nb::str(v).c_str());
            }
            e.set_config(f);
          }, "flat"_a, "Sets the flat GPU config used by the timing model.")
      .def("config_record", [](const stc::Engine& e) {
            nb::dict out;
            for (const auto& [k, v] : e.config_record()) {
              if (std::holds_alternative<double>(v)) out[k.c_str()] = std::get<double>(v);
              else out[k.c_str()] = std::get<std::string>(v);
            }
            return out;
          }, "Every config key the engine read, with the value its typed record holds.")
      .def("launch", &launch, "kernel"_a, "grid"_a, "block"_a, "args"_a, "shared_bytes"_a = 0, "timing"_a = true,
           "regs_per_thread"_a = 0, "max_cycles"_a = stc::kDefaultMaxCycles,
           "max_warp_insts"_a = stc::kDefaultMaxWarpInsts, "sample"_a = 0.0, "max_ctas"_a = stc::kDefaultMaxCtas,
           "serialize_wgmma"_a = false, "threads"_a = 1, "lockstep"_a = false, "skip_mma_values"_a = false,
           "Runs a kernel; returns its stats. max_cycles / max_warp_insts / max_ctas: watchdog limits (0: none); "
           "sample > 0: sampled simulation with that wave tolerance (0: full detail); serialize_wgmma: ptxas "
           "serialized the kernel's wgmma.mma_async (warning C7515), each waits for the warp's earlier groups. threads: host threads of a full-detail timing launch (its "
           "SMs split among them; the same stats as one thread). lockstep: a full-detail timing launch runs the "
           "lockstep loop, on one thread (the same stats). skip_mma_values: cycles only, the Tensor Core "
           "arithmetic skipped where its results cannot reach the timing (stat mma_values_skipped).");
  m.attr("DEFAULT_MAX_CYCLES") = stc::kDefaultMaxCycles;
  m.attr("DEFAULT_MAX_WARP_INSTS") = stc::kDefaultMaxWarpInsts;
  m.attr("DEFAULT_MAX_CTAS") = stc::kDefaultMaxCtas;
  // Launches on other threads end before the interpreter finalizes (stop_launches).
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&stop_launches));
  pthread_atfork(nullptr, nullptr, &forget_launches_in_child);
  m.def("stat_info", []() {
    std::vector<std::tuple<std::string, std::string, std::string, std::string, std::string>> out;
    static const char* kinds[] = {"counter", "value", "formula"};
    for (const auto& d : stc::stat_defs())
      out.emplace_back(d.name, d.group, d.unit, kinds[static_cast<int>(d.kind)], d.desc);
    return out;
  }, "(name, group, unit, kind, description) of every statistic a launch reports.");
}
