// The fused RMSNorm ops' per-call path in C++: a plan cache, the output allocation, the kernel
// launch and the autograd node, for torch CUDA tensors in eager mode.
//
// Why it exists: from Python, a call's key, its torch.empty and a ctypes cuLaunchKernel cost ~12 us
// on the H200's host, against ~11 us for all of F.rms_norm (benchmarks/NOTES.md, "Where the
// per-call time goes").  Here the same steps are C++: the key is read from the tensors' metadata,
// the output comes from at::empty, the launch goes straight to the driver, and a weight that
// requires grad gets a C++ autograd node instead of a Python torch.autograd.Function.
//
// What stays in Python (gpu_viz/rmsnorm/fused/): every check and every decision.  A call whose
// key is not cached here returns MISS; Python then validates the operands, chooses the kernel,
// grid and block (the same `Plan` its own launcher uses) and registers that plan with `insert`.
// The backward pass calls back into Python (`_ext_backward`, the fp32 composite of `_torch_backward`).
// The kernels themselves are compiled by CuPy (NVRTC); a plan holds the CUfunction CuPy loaded.
//
// No CUDA headers are needed: the driver is opened with dlopen, and the stream and device come
// from c10's device-generic interface, so this builds against any torch (CPU or CUDA wheel).
#include <torch/extension.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// ---- the CUDA driver, through dlopen ----------------------------------------------------------
using CUresult = int;
using LaunchFn = CUresult (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              void*, void**, void**);
using ErrorNameFn = CUresult (*)(CUresult, const char**);
using DeviceGetFn = CUresult (*)(int*, int);
using PrimaryRetainFn = CUresult (*)(void**, int);
using PrimaryReleaseFn = CUresult (*)(int);
using CtxSetFn = CUresult (*)(void*);

constexpr CUresult kInvalidContext = 201;  // CUDA_ERROR_INVALID_CONTEXT: no context on this thread

struct Driver {
  void* lib = nullptr;
  LaunchFn launch = nullptr;
  ErrorNameFn error_name = nullptr;
  DeviceGetFn device_get = nullptr;
  PrimaryRetainFn retain = nullptr;
  PrimaryReleaseFn release = nullptr;
  CtxSetFn ctx_set = nullptr;
};
Driver g_driver;

// ---- what init() was given ---------------------------------------------------------------------
PyTypeObject* g_tensor_type = nullptr;     // torch.Tensor
PyTypeObject* g_parameter_type = nullptr;  // torch.nn.Parameter
PyObject* g_backward = nullptr;            // fused._ext_backward
bool g_allow_cpu = false;                  // tests only: CPU tensors, no stream (a stub driver)

enum Op : int64_t { kRmsnorm = 0, kGate = 1, kAdd = 2 };
enum Code : long { kMiss = 0, kNoPlan = 1, kNoContext = 2 };  // call()'s int answers

// One operand layout's launch, decided in Python (fused.launch.Plan): the kernel and every scalar
// argument; only the five pointers change per call.  The argument order is the kernels'
// (kernels/rmsnorm_fused.cu): y, h, x, x2, w, M, N, row stride of x, row stride of x2, eps,
// weight_offset, flags.
struct Plan {
  void* fn = nullptr;
  unsigned grid = 0, block = 0;
  int64_t M = 0;
  int32_t N = 0;
  int64_t sx = 0, sg = 0;
  float eps = 0.f, offset = 0.f;
  int32_t flags = 0;
  bool add = false;
  // The Python plan: it holds the CuPy RawKernel, whose module must outlive `fn`.  Plans are
  // created and dropped with the GIL held (insert, clear, call).
  PyObject* owner = nullptr;
  ~Plan() { Py_XDECREF(owner); }
};

// ---- the plan cache ----------------------------------------------------------------------------
// The key holds everything fused._fast's key holds: op, cast, eps, weight_offset, the current
// device, and per operand its Python type, dtype, device, sizes, strides and data_ptr % 16.
using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const noexcept {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (int64_t v : k) {
      h ^= static_cast<uint64_t>(v);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};
// A null plan: the layout takes Python's path every call (fused._launch: the wide-row module,
// a copy of non-mergeable leading dims).
// Never destroyed: a static map would drop its plans (and their Python owners) after the
// interpreter is gone.
auto& g_plans = *new std::unordered_map<Key, std::shared_ptr<Plan>, KeyHash>();
size_t g_max_plans = 1024;  // past this the cache starts again empty (as fused.MAX_PLANS)

int64_t bits_of(double v) {
  int64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Appends one operand to the key.  False: not an operand this path takes (a tensor subclass,
// not CUDA, no storage, a dtype the kernels lack, too many dims); the caller answers MISS and
// Python checks it (and raises where it is wrong).
bool add_operand(Key& key, PyObject* o, const at::Tensor** out, bool* requires_grad) {
  PyTypeObject* t = Py_TYPE(o);
  if (t != g_tensor_type && t != g_parameter_type) return false;
  const at::Tensor& a = THPVariable_Unpack(o);
  if (!a.defined() || a.layout() != at::kStrided || !a.has_storage()) return false;
  // a negated view's bit, or a null pointer (freed storage): Python resolves or refuses them
  if (a.is_neg() || (a.numel() > 0 && a.data_ptr() == nullptr)) return false;
  if (!(a.is_cuda() || (g_allow_cpu && a.is_cpu()))) return false;
  const auto st = a.scalar_type();
  if (st != at::kFloat && st != at::kHalf && st != at::kBFloat16) return false;
  const int64_t dim = a.dim();
  if (dim > 8) return false;
  key.push_back(reinterpret_cast<intptr_t>(t));
  key.push_back(static_cast<int64_t>(st));
  key.push_back(a.is_cuda() ? a.get_device() : -1);
  key.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(a.data_ptr()) % 16));
  key.push_back(dim);
  for (int64_t i = 0; i < dim; ++i) key.push_back(a.size(i));
  for (int64_t i = 0; i < dim; ++i) key.push_back(a.stride(i));
  *out = &a;
  *requires_grad = *requires_grad || a.requires_grad();
  return true;
}

int current_device() {
  if (g_allow_cpu && !c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) return -1;
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getDevice().index();
}

struct Operands {
  const at::Tensor* x = nullptr;
  const at::Tensor* x2 = nullptr;
  const at::Tensor* w = nullptr;
  bool requires_grad = false;
};

// The key of a call, or false where this path does not take it.
bool make_key(Key& key, Operands& ops, int64_t op, PyObject* x, PyObject* x2, PyObject* w, double eps,
              double offset, int64_t cast) {
  if (op < kRmsnorm || op > kAdd || cast < 0) return false;
  if ((op == kRmsnorm) != (x2 == Py_None)) return false;
  key.reserve(48);
  key.push_back(op);
  key.push_back(cast);
  key.push_back(bits_of(eps));
  key.push_back(bits_of(offset));
  if (!add_operand(key, x, &ops.x, &ops.requires_grad)) return false;
  if (!add_operand(key, w, &ops.w, &ops.requires_grad)) return false;
  if (x2 != Py_None) {
    if (!add_operand(key, x2, &ops.x2, &ops.requires_grad)) return false;
  } else {
    key.push_back(-1);
  }
  // Last: only CUDA operands get here (or CPU ones in allow_cpu mode), so a CPU call never asks
  // for a CUDA device (which throws on a CPU-only torch instead of Python's ValueError).
  key.push_back(current_device());
  return true;
}

std::string error_name(CUresult rc) {
  const char* s = nullptr;
  if (g_driver.error_name != nullptr && g_driver.error_name(rc, &s) == 0 && s != nullptr) return s;
  return "CUDA error " + std::to_string(rc);
}

// Makes the device's primary context current on this thread (the one CuPy loaded the kernels
// in, and torch's): a thread that has not touched CUDA through the runtime has none.
bool set_primary_context(int ordinal) {
  if (!g_driver.device_get || !g_driver.retain || !g_driver.release || !g_driver.ctx_set) return false;
  int dev = 0;
  void* ctx = nullptr;
  if (g_driver.device_get(&dev, ordinal) != 0 || g_driver.retain(&ctx, dev) != 0) return false;
  const bool ok = g_driver.ctx_set(ctx) == 0;
  g_driver.release(dev);  // the runtime holds its own reference to the primary context
  return ok;
}

// Allocates y (and h) like x, contiguous, and launches on the current stream of x's device.
// Returns the driver's result (0 on success); the outputs are in `outs` either way.
CUresult run_plan(const Plan& p, const at::Tensor& x, const at::Tensor* x2, const at::Tensor& w,
                  std::vector<at::Tensor>& outs) {
  auto opts = x.options();
  outs.clear();
  outs.push_back(at::empty(x.sizes(), opts));
  if (p.add) outs.push_back(at::empty(x.sizes(), opts));
  if (p.M == 0) return 0;
  uint64_t ptr[5] = {reinterpret_cast<uint64_t>(outs[0].data_ptr()),
                     p.add ? reinterpret_cast<uint64_t>(outs[1].data_ptr()) : 0,
                     reinterpret_cast<uint64_t>(x.data_ptr()),
                     x2 != nullptr ? reinterpret_cast<uint64_t>(x2->data_ptr()) : 0,
                     reinterpret_cast<uint64_t>(w.data_ptr())};
  int64_t M = p.M, sx = p.sx, sg = p.sg;
  int32_t N = p.N, flags = p.flags;
  float eps = p.eps, offset = p.offset;
  void* params[12] = {&ptr[0], &ptr[1], &ptr[2], &ptr[3], &ptr[4], &M, &N, &sx, &sg, &eps, &offset, &flags};
  void* stream = nullptr;
  int ordinal = 0;
  if (x.is_cuda()) {
    const c10::Device dev(c10::DeviceType::CUDA, x.get_device());
    stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(dev).native_handle();
    ordinal = x.get_device();
  }
  if (g_driver.launch == nullptr) return kInvalidContext;
  CUresult rc = g_driver.launch(p.fn, p.grid, 1, 1, p.block, 1, 1, 0, stream, params, nullptr);
  if (rc == kInvalidContext && set_primary_context(ordinal)) {
    rc = g_driver.launch(p.fn, p.grid, 1, 1, p.block, 1, 1, 0, stream, params, nullptr);
  }
  return rc;
}

// Thrown by the autograd node's forward when no context could be made current: call() answers
// NO_CONTEXT then, as it does without autograd (Python launches through CuPy).
struct NoContext : std::exception {
  const char* what() const noexcept override { return "no CUDA context"; }
};

[[noreturn]] void launch_failed(CUresult rc, const Plan& p) {
  throw std::runtime_error("cuLaunchKernel of the fused RMSNorm kernel failed: " + error_name(rc) + " (" +
                           std::to_string(rc) + "); grid " + std::to_string(p.grid) + ", block " +
                           std::to_string(p.block));
}

}  // namespace

namespace gpu_viz {
// ---- autograd ----------------------------------------------------------------------------------
// Forward: the plan's launch.  Backward: Python's fp32 composite (fused._ext_backward), called
// with the GIL held; its answers are (d x, d x2, d weight), each a tensor or None.  rmsnorm has
// no x2: x stands in for it (autograd takes no undefined input) and gets no gradient through it.
struct FusedRMSNorm : public torch::autograd::Function<FusedRMSNorm> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                                                const at::Tensor& x2, const at::Tensor& w, int64_t plan,
                                                int64_t op, double eps, double offset) {
    const Plan& p = *reinterpret_cast<const Plan*>(plan);
    const bool has_x2 = op != kRmsnorm;
    std::vector<at::Tensor> outs;
    const CUresult rc = run_plan(p, x, has_x2 ? &x2 : nullptr, w, outs);
    if (rc == kInvalidContext) throw NoContext();
    if (rc != 0) launch_failed(rc, p);
    if (p.add) {
      ctx->save_for_backward({x, x2, w, outs[1]});
    } else {
      ctx->save_for_backward({x, x2, w});
    }
    ctx->saved_data["op"] = op;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["offset"] = offset;
    return outs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const int64_t op = ctx->saved_data["op"].toInt();
    const double eps = ctx->saved_data["eps"].toDouble();
    const double offset = ctx->saved_data["offset"].toDouble();
    const bool has_x2 = op != kRmsnorm;
    const bool n0 = ctx->needs_input_grad(0), n1 = has_x2 && ctx->needs_input_grad(1),
               n2 = ctx->needs_input_grad(2);
    pybind11::gil_scoped_acquire gil;
    auto wrap = [](const at::Tensor& t) -> pybind11::object {
      if (!t.defined()) return pybind11::none();
      return pybind11::reinterpret_steal<pybind11::object>(THPVariable_Wrap(t));
    };
    pybind11::object fn = pybind11::reinterpret_borrow<pybind11::object>(g_backward);
    pybind11::object r = fn(op, wrap(grads[0]), grads.size() > 1 ? wrap(grads[1]) : pybind11::none(),
                            wrap(saved[0]), has_x2 ? wrap(saved[1]) : pybind11::none(), wrap(saved[2]),
                            saved.size() > 3 ? wrap(saved[3]) : pybind11::none(), eps, offset,
                            pybind11::make_tuple(n0, n1, n2));
    // (tensor or None) x 3, checked: a non-tensor read as one would crash, a short tuple be read past
    if (!PyTuple_Check(r.ptr()) || PyTuple_GET_SIZE(r.ptr()) != 3) {
      PyErr_Format(PyExc_TypeError, "the fused RMSNorm backward must return a tuple of 3 (tensor or None), got %R",
                   r.ptr());
      throw pybind11::error_already_set();
    }
    torch::autograd::variable_list out(7);
    for (int i = 0; i < 3; ++i) {
      PyObject* g = PyTuple_GET_ITEM(r.ptr(), i);
      if (g != Py_None && !THPVariable_Check(g)) {
        PyErr_Format(PyExc_TypeError, "the fused RMSNorm backward returned %R at %d: expected a tensor or None", g, i);
        throw pybind11::error_already_set();
      }
      if (g != Py_None && (i != 1 || has_x2)) out[i] = THPVariable_Unpack(g);
    }
    return out;
  }
};

}  // namespace gpu_viz

namespace {
using gpu_viz::FusedRMSNorm;

// ---- the module's functions --------------------------------------------------------------------
// One call's arguments, as call() and insert() both take them: (op, x, x2_or_None, weight, eps,
// weight_offset, cast, last), and its key.
struct Args {
  int64_t op = 0, cast = 0;
  double eps = 0, offset = 0;
  Key key;
  Operands ops;
};

// -1: a Python error is set (wrong count or types); 0: not a call this path keys; 1: keyed.
int read_args(const char* name, PyObject* const* args, Py_ssize_t nargs, Args& a) {
  if (nargs != 8) {
    PyErr_Format(PyExc_TypeError, "%s() takes 8 arguments (%zd given)", name, nargs);
    return -1;
  }
  a.op = PyLong_AsLongLong(args[0]);
  a.eps = PyFloat_AsDouble(args[4]);
  a.offset = PyFloat_AsDouble(args[5]);
  a.cast = PyLong_AsLongLong(args[6]);
  if (PyErr_Occurred()) return -1;
  return make_key(a.key, a.ops, a.op, args[1], args[2], args[3], a.eps, a.offset, a.cast) ? 1 : 0;
}

// Runs body(), turning a C++ exception into a Python RuntimeError with its message.
template <typename F>
PyObject* guarded(F&& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const pybind11::error_already_set& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// The start call() and insert() share: the arguments read inside guarded(); body(a) for a call
// this path keys, unkeyed() for one it does not, nullptr where they set a Python error.
template <typename Unkeyed, typename Body>
PyObject* with_args(const char* name, PyObject* const* args, Py_ssize_t nargs, Unkeyed&& unkeyed, Body&& body) {
  return guarded([&]() -> PyObject* {
    Args a;
    const int keyed = read_args(name, args, nargs, a);
    if (keyed < 0) return nullptr;
    return keyed == 0 ? unkeyed() : body(a);
  });
}

PyObject* as_python(std::vector<at::Tensor>& outs) {
  if (outs.size() == 1) return THPVariable_Wrap(std::move(outs[0]));
  PyObject* y = THPVariable_Wrap(std::move(outs[0]));
  PyObject* h = THPVariable_Wrap(std::move(outs[1]));
  if (y == nullptr || h == nullptr) {
    Py_XDECREF(y);
    Py_XDECREF(h);
    return nullptr;
  }
  PyObject* tup = PyTuple_Pack(2, y, h);
  Py_DECREF(y);
  Py_DECREF(h);
  return tup;
}

// call(op, x, x2_or_None, weight, eps, weight_offset, cast, autograd) -> y | (y, h) | int
//   op: 0 rmsnorm, 1 rmsnorm_gate, 2 rmsnorm_add; cast: 0 "fp32", 1 "llama".
//   autograd: True records the call for autograd when grad mode is on and an operand requires
//   grad (the eager path); False never does (the custom ops' implementation, below autograd).
//   Answers MISS (0) for a layout without a plan, NO_PLAN (1) for one that takes Python's path,
//   NO_CONTEXT (2) when no CUDA context could be made current (Python launches through CuPy).
PyObject* call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return with_args("call", args, nargs, [] { return PyLong_FromLong(kMiss); }, [&](Args& a) -> PyObject* {
    auto it = g_plans.find(a.key);
    if (it == g_plans.end()) return PyLong_FromLong(kMiss);
    if (!it->second) return PyLong_FromLong(kNoPlan);
    std::shared_ptr<Plan> plan = it->second;  // alive through this call even if the cache is cleared
    const int want = PyObject_IsTrue(args[7]);
    if (want < 0) return nullptr;
    const Operands& ops = a.ops;
    if (want && ops.requires_grad && at::GradMode::is_enabled()) {
      const at::Tensor& x2 = ops.x2 != nullptr ? *ops.x2 : *ops.x;  // see FusedRMSNorm
      torch::autograd::variable_list outs;
      try {
        outs = FusedRMSNorm::apply(*ops.x, x2, *ops.w, reinterpret_cast<int64_t>(plan.get()), a.op, a.eps,
                                   a.offset);
      } catch (const NoContext&) {
        return PyLong_FromLong(kNoContext);
      }
      return as_python(outs);
    }
    std::vector<at::Tensor> outs;
    const CUresult rc = run_plan(*plan, *ops.x, ops.x2, *ops.w, outs);
    if (rc == kInvalidContext) return PyLong_FromLong(kNoContext);
    if (rc != 0) launch_failed(rc, *plan);
    return as_python(outs);
  });
}

// insert(op, x, x2_or_None, weight, eps, weight_offset, cast, fields_or_None) -> bool
//   fields: (fn, grid, block, M, N, sx, sg, eps32, offset32, flags, add, owner) of fused.launch.Plan
//   (owner: an object kept alive with the plan, the Python plan holding the kernel); None
//   marks the layout as Python's every call.  False when the call is not one this path keys.
PyObject* insert(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return with_args("insert", args, nargs, []() -> PyObject* { Py_RETURN_FALSE; }, [&](Args& a) -> PyObject* {
    std::shared_ptr<Plan> plan;
    if (args[7] != Py_None) {
      auto p = std::make_shared<Plan>();
      unsigned long long fn = 0;
      long long M = 0, sx = 0, sg = 0;
      int add = 0;
      PyObject* owner = nullptr;
      if (!PyArg_ParseTuple(args[7], "KIILiLLffipO", &fn, &p->grid, &p->block, &M, &p->N, &sx, &sg, &p->eps,
                            &p->offset, &p->flags, &add, &owner))
        return nullptr;
      Py_INCREF(owner);
      p->owner = owner;
      p->fn = reinterpret_cast<void*>(static_cast<uintptr_t>(fn));
      p->M = M;
      p->sx = sx;
      p->sg = sg;
      p->add = add != 0;
      plan = std::move(p);
    }
    if (g_plans.size() >= g_max_plans) g_plans.clear();
    g_plans[std::move(a.key)] = std::move(plan);
    Py_RETURN_TRUE;
  });
}

PyObject* clear(PyObject*, PyObject*) {
  g_plans.clear();
  Py_RETURN_NONE;
}

PyObject* size(PyObject*, PyObject*) { return PyLong_FromSize_t(g_plans.size()); }

PyMethodDef kMethods[] = {
    {"call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(call)), METH_FASTCALL,
     "call(op, x, x2, weight, eps, weight_offset, cast, autograd) -> y, (y, h) or an int code"},
    {"insert", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(insert)), METH_FASTCALL,
     "insert(op, x, x2, weight, eps, weight_offset, cast, fields) -> bool"},
    {"clear", clear, METH_NOARGS, "forget every plan"},
    {"size", size, METH_NOARGS, "the number of plans cached"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "gpu_viz's fused RMSNorm launcher (kernels/rmsnorm_launcher.cpp)";
  // init(tensor_type, parameter_type, backward, driver_path, allow_cpu, max_plans) -> str
  //   Opens the driver library (libcuda.so.1, or a stub in the tests); returns "" or why not.
  m.def("init", [](pybind11::object tensor_type, pybind11::object parameter_type, pybind11::object backward,
                   const std::string& driver, bool allow_cpu, int64_t max_plans) -> std::string {
    g_tensor_type = reinterpret_cast<PyTypeObject*>(tensor_type.release().ptr());
    g_parameter_type = reinterpret_cast<PyTypeObject*>(parameter_type.release().ptr());
    Py_XDECREF(g_backward);
    g_backward = backward.release().ptr();
    g_allow_cpu = allow_cpu;
    g_max_plans = static_cast<size_t>(max_plans > 0 ? max_plans : 1);
    g_plans.clear();
    Driver d;
    d.lib = dlopen(driver.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (d.lib == nullptr) {
      const char* why = dlerror();
      g_driver = Driver();
      return std::string("cannot open ") + driver + ": " + (why ? why : "unknown error");
    }
    d.launch = reinterpret_cast<LaunchFn>(dlsym(d.lib, "cuLaunchKernel"));
    d.error_name = reinterpret_cast<ErrorNameFn>(dlsym(d.lib, "cuGetErrorName"));
    d.device_get = reinterpret_cast<DeviceGetFn>(dlsym(d.lib, "cuDeviceGet"));
    d.retain = reinterpret_cast<PrimaryRetainFn>(dlsym(d.lib, "cuDevicePrimaryCtxRetain"));
    d.release = reinterpret_cast<PrimaryReleaseFn>(dlsym(d.lib, "cuDevicePrimaryCtxRelease_v2"));
    if (d.release == nullptr) d.release = reinterpret_cast<PrimaryReleaseFn>(dlsym(d.lib, "cuDevicePrimaryCtxRelease"));
    d.ctx_set = reinterpret_cast<CtxSetFn>(dlsym(d.lib, "cuCtxSetCurrent"));
    g_driver = d;
    if (d.launch == nullptr) return driver + " has no cuLaunchKernel";
    return "";
  });
  PyModule_AddFunctions(m.ptr(), kMethods);
}
