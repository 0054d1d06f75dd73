// The functors of plugins/cuda/activation.cu run on the host (harness.h).
#include "harness.h"

// After harness.h, which makes the functors host-callable.
#include "activation.cu"

using namespace oar_cuda;
// A stand-in for make(): attributes from the command line.
template <class C>
Gelu<C> mk(Gelu<C>*) {
  return {h::attr("approximate", 0) != 0};
}
template <class C>
Silu<C> mk(Silu<C>*) {
  return {};
}
template <class C>
LeakyRelu<C> mk(LeakyRelu<C>*) {
  return {C(h::attr("negative_slope", 0.01))};
}
template <class C>
Elu<C> mk(Elu<C>*) {
  return {C(h::attr("alpha", 1.0))};
}
template <class C>
Softplus<C> mk(Softplus<C>*) {
  return {C(h::attr("beta", 1.0)), C(h::attr("threshold", 20.0))};
}
template <class C>
Hardswish<C> mk(Hardswish<C>*) {
  return {};
}
template <class C>
Hardsigmoid<C> mk(Hardsigmoid<C>*) {
  return {C(h::attr("slope", 1.0 / 6.0)), C(h::attr("offset", 0.5))};
}
template <template <class> class A>
void act(int dtype, bool grad) {
  dispatch_float(dtype, "a", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using AA = A<acc_t<T>>;
    AA a = mk((AA*)nullptr);
    if (grad)
      h::out2<T>(ActBackward<T, AA>{a});
    else
      h::out1<T>(ActForward<T, AA>{a});
  });
}
int main(int argc, char** argv) {
  int dtype, arity;
  h::read(argc, argv, dtype, arity);
  std::string op = argv[1];
  bool grad = op.size() > 5 && op.substr(op.size() - 5) == "_grad";
  std::string base = grad ? op.substr(0, op.size() - 5) : op;
  if (base == "gelu")
    act<Gelu>(dtype, grad);
  else if (base == "silu")
    act<Silu>(dtype, grad);
  else if (base == "leaky_relu")
    act<LeakyRelu>(dtype, grad);
  else if (base == "elu")
    act<Elu>(dtype, grad);
  else if (base == "softplus")
    act<Softplus>(dtype, grad);
  else if (base == "hardswish")
    act<Hardswish>(dtype, grad);
  else if (base == "hardsigmoid")
    act<Hardsigmoid>(dtype, grad);
  else if (op == "clip") {
    const double lo = h::attr("min", -INFINITY), hi = h::attr("max", INFINITY);
    dispatch_real(dtype, "clip", [&](auto tag) {
      using T = typename decltype(tag)::type;
      h::out1<T>(Same1<T, ClipOp<acc_t<T>>>{{clip_bound<T>(lo), clip_bound<T>(hi)}});
    });
  } else {
    fprintf(stderr, "unknown op\n");
    return 1;
  }
  return 0;
}
