// The `_trainwatch` extension module: binds the C++ client (trainwatch/client.h) for the Python
// package `trainwatch`. An edge only: it converts between Python and C++ values and releases the
// GIL around the calls that may wait; every behaviour lives in the C++ core or in the package.
//
// Errors: nothing here raises into a training loop. `Run.log` skips the values it cannot convert
// and returns their keys; the package warns about them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "trainwatch/client.h"

namespace py = pybind11;

namespace trainwatch::python {
namespace {

// The core's warnings, queued for Python. The core calls `on_warning` from its own threads (and
// from Log() and Close()), where calling into Python could deadlock on the GIL or outlive the
// interpreter; so the binding only queues them, and the package takes them from its own thread.
class WarningQueue {
 public:
  static constexpr size_t kMaxQueued = 100;  // beyond this, warnings are counted, not kept

  void Push(WarningKind kind, const std::string& message) TW_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (messages_.size() < kMaxQueued) {
      messages_.emplace_back(kind, message);
    } else {
      if (overflowed_++ == 0) overflow_kind_ = kind;
    }
  }

  // Everything queued so far, oldest first, then a note of how many did not fit.
  std::vector<std::pair<WarningKind, std::string>> Take() TW_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    std::vector<std::pair<WarningKind, std::string>> taken = std::move(messages_);
    messages_.clear();
    if (overflowed_ > 0) {
      taken.emplace_back(overflow_kind_,
                         std::to_string(overflowed_) + " further warnings were not kept");
      overflowed_ = 0;
    }
    return taken;
  }

 private:
  Mutex mu_;
  std::vector<std::pair<WarningKind, std::string>> messages_ TW_GUARDED_BY(mu_);
  uint64_t overflowed_ TW_GUARDED_BY(mu_) = 0;
  WarningKind overflow_kind_ TW_GUARDED_BY(mu_) = WarningKind{};  // the first one not kept
};

// The Python Client: a trainwatch::Client and the queue its warnings go to.
struct PyClient {
  explicit PyClient(ClientOptions options) : warnings(std::make_shared<WarningQueue>()) {
    options.on_warning = [queue = warnings](WarningKind kind, const std::string& message) {
      queue->Push(kind, message);
    };
    client = std::make_unique<Client>(std::move(options));
  }

  // Outlives the client's threads: their callback holds it too.
  std::shared_ptr<WarningQueue> warnings;
  std::unique_ptr<Client> client;
};

// Destroys a PyClient without the GIL: ~Client() closes, which may wait for the server.
struct PyClientDeleter {
  void operator()(PyClient* client) const {
    py::gil_scoped_release release;
    delete client;
  }
};
using PyClientHolder = std::unique_ptr<PyClient, PyClientDeleter>;

// Metrics of one Log() call that fit on the stack; more spill into a vector.
constexpr size_t kInlineMetrics = 32;

// Converts one metric value to a double. Accepts float (and subclasses such as numpy.float64),
// int and bool, then anything with __float__ or __index__ that yields one number: numpy scalars,
// 0-d and one-element tensors and arrays. Strings, bytes and None are refused even though float()
// would parse a numeric string. Returns false (with no Python error set) when not convertible.
bool ToDouble(PyObject* value, double* out) {
  if (PyFloat_CheckExact(value)) {
    *out = PyFloat_AS_DOUBLE(value);
    return true;
  }
  if (PyLong_Check(value)) {  // int and bool
    const double d = PyLong_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) {  // too large for a double
      PyErr_Clear();
      return false;
    }
    *out = d;
    return true;
  }
  if (PyUnicode_Check(value) || PyBytes_Check(value) || PyByteArray_Check(value) ||
      value == Py_None) {
    return false;
  }
  PyObject* as_float = PyNumber_Float(value);  // numpy scalars, tensors (a CUDA one syncs)
  if (as_float == nullptr) {
    PyErr_Clear();
    return false;
  }
  *out = PyFloat_AS_DOUBLE(as_float);
  Py_DECREF(as_float);
  return true;
}

// Run.log(metrics, step, time=None) -> None, or the list of keys that were skipped.
//
// Keys must be str; each value must convert by ToDouble. The names are views into the dict's
// keys, which the dict keeps alive for the duration of the call; Run::Log copies what it keeps.
py::object Log(Run& run, const py::dict& metrics, int64_t step, std::optional<double> time) {
  std::array<Metric, kInlineMetrics> inline_buffer;
  std::vector<Metric> spill;
  const Py_ssize_t size = PyDict_GET_SIZE(metrics.ptr());
  Metric* buffer = inline_buffer.data();
  if (static_cast<size_t>(size) > kInlineMetrics) {
    spill.resize(static_cast<size_t>(size));
    buffer = spill.data();
  }

  size_t count = 0;
  PyObject* rejected = nullptr;  // a new list, created on the first skipped key
  Py_ssize_t pos = 0;
  PyObject* key;
  PyObject* value;
  while (PyDict_Next(metrics.ptr(), &pos, &key, &value)) {
    const char* name = nullptr;
    Py_ssize_t name_size = 0;
    if (PyUnicode_Check(key)) {
      name = PyUnicode_AsUTF8AndSize(key, &name_size);
      if (name == nullptr) PyErr_Clear();  // e.g. a lone surrogate
    }
    double number;
    if (name != nullptr && ToDouble(value, &number)) {
      buffer[count++] = Metric{std::string_view(name, static_cast<size_t>(name_size)), number};
      continue;
    }
    if (rejected == nullptr) rejected = PyList_New(0);
    if (rejected != nullptr && PyList_Append(rejected, key) != 0) PyErr_Clear();
  }

  const std::span<const Metric> span(buffer, count);
  if (count > 0) {
    if (time.has_value()) {
      run.Log(step, span, *time);
    } else {
      run.Log(step, span);
    }
  }
  if (rejected == nullptr) return py::none();
  return py::reinterpret_steal<py::object>(rejected);
}

// Copies a 1-d sequence of numbers (list, numpy array, ...) into a vector of doubles.
std::vector<double> ToVector(
    const py::array_t<double, py::array::c_style | py::array::forcecast>& array) {
  const double* data = array.data();
  return std::vector<double>(data, data + array.size());
}

py::dict StatsToDict(const ClientStats& stats) {
  py::dict d;
  d["points_logged"] = stats.points_logged;
  d["points_acked"] = stats.points_acked;
  d["points_dropped"] = stats.points_dropped;
  d["points_spooled"] = stats.points_spooled;
  d["batches_sent"] = stats.batches_sent;
  d["batches_acked"] = stats.batches_acked;
  d["batches_duplicate"] = stats.batches_duplicate;
  d["reconnects"] = stats.reconnects;
  d["spool_bytes"] = stats.spool_bytes;
  d["memory_bytes"] = stats.memory_bytes;
  d["connected"] = stats.connected;
  d["transport"] = stats.transport;
  d["last_error"] = stats.last_error;
  return d;
}

void BindOptions(py::module_& m) {
  py::enum_<WarningKind>(m, "WarningKind")
      .value("SERVER_UNREACHABLE", WarningKind::kServerUnreachable)
      .value("POINTS_DROPPED", WarningKind::kPointsDropped)
      .value("POINTS_REJECTED", WarningKind::kPointsRejected)
      .value("LEFT_IN_SPOOL", WarningKind::kLeftInSpool)
      .value("SPOOL", WarningKind::kSpool);
  py::enum_<Mode>(m, "Mode").value("ONLINE", Mode::kOnline).value("OFFLINE", Mode::kOffline);
  py::enum_<Transport>(m, "Transport")
      .value("AUTO", Transport::kAuto)
      .value("GRPC", Transport::kGrpc)
      .value("HTTP", Transport::kHttp);
  py::enum_<OverflowPolicy>(m, "OverflowPolicy")
      .value("DROP_OLDEST", OverflowPolicy::kDropOldest)
      .value("DROP_NEWEST", OverflowPolicy::kDropNewest)
      .value("BLOCK", OverflowPolicy::kBlock);

  py::class_<ClientOptions>(m, "ClientOptions", "trainwatch::ClientOptions (client.h)")
      .def(py::init<>())
      .def_readwrite("server", &ClientOptions::server)
      .def_readwrite("grpc_target", &ClientOptions::grpc_target)
      .def_readwrite("api_key", &ClientOptions::api_key)
      .def_readwrite("tls_ca_file", &ClientOptions::tls_ca_file)
      .def_readwrite("tls_cert_file", &ClientOptions::tls_cert_file)
      .def_readwrite("tls_key_file", &ClientOptions::tls_key_file)
      .def_readwrite("secret_patterns", &ClientOptions::secret_patterns)
      .def_readwrite("mode", &ClientOptions::mode)
      .def_readwrite("transport", &ClientOptions::transport)
      .def_readwrite("spool_dir", &ClientOptions::spool_dir)
      .def_readwrite("spool_max_bytes", &ClientOptions::spool_max_bytes)
      .def_readwrite("memory_max_bytes", &ClientOptions::memory_max_bytes)
      .def_readwrite("buffer_records", &ClientOptions::buffer_records)
      .def_readwrite("overflow", &ClientOptions::overflow)
      .def_readwrite("batch_max_points", &ClientOptions::batch_max_points)
      .def_readwrite("batch_max_bytes", &ClientOptions::batch_max_bytes)
      .def_readwrite("batch_max_delay_seconds", &ClientOptions::batch_max_delay_seconds)
      .def_readwrite("heartbeat_interval_seconds", &ClientOptions::heartbeat_interval_seconds)
      .def_readwrite("backoff_initial_seconds", &ClientOptions::backoff_initial_seconds)
      .def_readwrite("backoff_max_seconds", &ClientOptions::backoff_max_seconds)
      .def_readwrite("ack_timeout_seconds", &ClientOptions::ack_timeout_seconds)
      .def_readwrite("flush_timeout_seconds", &ClientOptions::flush_timeout_seconds);

  py::class_<RankOptions>(m, "RankOptions", "trainwatch::RankOptions (client.h)")
      .def(py::init<>())
      .def_readwrite("rank", &RankOptions::rank)
      .def_readwrite("world_size", &RankOptions::world_size)
      .def_readwrite("local_rank", &RankOptions::local_rank)
      .def_readwrite("host", &RankOptions::host);

  py::class_<RunOptions>(m, "RunOptions", "trainwatch::RunOptions (client.h)")
      .def(py::init<>())
      .def_readwrite("project", &RunOptions::project)
      .def_readwrite("id", &RunOptions::id)
      .def_readwrite("name", &RunOptions::name)
      .def_readwrite("group", &RunOptions::group)
      .def_readwrite("tags", &RunOptions::tags)
      .def_readwrite("config_json", &RunOptions::config_json)
      .def_readwrite("resume", &RunOptions::resume)
      .def_readwrite("system_metrics_interval_seconds",
                     &RunOptions::system_metrics_interval_seconds)
      .def_readwrite("nvml_library", &RunOptions::nvml_library)
      .def_readwrite("machine_metrics", &RunOptions::machine_metrics)
      .def_readwrite("gpu_metrics", &RunOptions::gpu_metrics)
      .def_readwrite("gpu_index", &RunOptions::gpu_index)
      .def_readwrite("rank", &RunOptions::rank);
}

void BindClient(py::module_& m) {
  py::class_<PyClient, PyClientHolder>(m, "Client",
                                       "trainwatch::Client (client.h); its warnings are queued "
                                       "for take_warnings() instead of going to stderr")
      .def(py::init([](ClientOptions options) {
             py::gil_scoped_release release;
             return PyClientHolder(new PyClient(std::move(options)));
           }),
           py::arg("options"))
      // The Run keeps its Client alive: the Python object outlives every run it started.
      .def(
          "start_run",
          [](PyClient& c, const RunOptions& options) { return c.client->StartRun(options); },
          py::arg("options"), py::keep_alive<0, 1>(), py::call_guard<py::gil_scoped_release>())
      .def(
          "flush", [](PyClient& c, double timeout) { return c.client->Flush(timeout); },
          py::arg("timeout_seconds"), py::call_guard<py::gil_scoped_release>())
      .def(
          "close", [](PyClient& c) { c.client->Close(); }, py::call_guard<py::gil_scoped_release>())
      .def("stats", [](const PyClient& c) { return StatsToDict(c.client->Stats()); })
      .def(
          "take_warnings", [](PyClient& c) { return c.warnings->Take(); },
          "The core's warnings since the last call, oldest first, as (WarningKind, message).")
      .def_property_readonly("writer_id", [](const PyClient& c) { return c.client->writer_id(); })
      .def_property_readonly("spool_path",
                             [](const PyClient& c) { return c.client->spool_path(); });
}

void BindRun(py::module_& m) {
  py::class_<Run>(m, "Run", "trainwatch::Run (client.h)")
      .def_property_readonly("project", &Run::project)
      .def_property_readonly("id", &Run::id)
      .def("log", &Log, py::arg("metrics"), py::arg("step"), py::arg("time") = py::none(),
           "Logs the convertible values of `metrics` at `step`; returns None, or the list of "
           "keys that were skipped (not a str, or a value that is not one number).")
      .def(
          "log_histogram",
          [](Run& run, int64_t step, std::string_view name,
             const py::array_t<double, py::array::c_style | py::array::forcecast>& edges,
             const py::array_t<double, py::array::c_style | py::array::forcecast>& counts) {
            run.LogHistogram(step, name, HistogramBuckets{ToVector(edges), ToVector(counts)});
          },
          py::arg("step"), py::arg("name"), py::arg("edges"), py::arg("counts"))
      // The bytes are copied into the batch before this returns (the Python object may change).
      .def(
          "log_image",
          [](Run& run, int64_t step, std::string_view name, const py::bytes& data,
             std::string_view caption,
             uint32_t index) { run.LogImage(step, name, std::string(data), caption, index); },
          py::arg("step"), py::arg("name"), py::arg("data"), py::arg("caption"), py::arg("index"))
      .def(
          "log_text",
          [](Run& run, int64_t step, std::string_view name, std::string_view text) {
            run.LogText(step, name, text);
          },
          py::arg("step"), py::arg("name"), py::arg("text"))
      .def("set_config", &Run::SetConfig, py::arg("config_json"))
      .def("set_tags", &Run::SetTags, py::arg("tags"), py::arg("replace") = false)
      .def("set_graph", &Run::SetGraph, py::arg("graph_json"))
      .def("finish", &Run::Finish, py::arg("status") = "finished",
           py::call_guard<py::gil_scoped_release>());
}

}  // namespace
}  // namespace trainwatch::python

PYBIND11_MODULE(_trainwatch, m) {
  m.doc() = "Bindings of the trainwatch C++ client; use the `trainwatch` package instead.";
  trainwatch::python::BindOptions(m);
  trainwatch::python::BindClient(m);
  trainwatch::python::BindRun(m);
}
