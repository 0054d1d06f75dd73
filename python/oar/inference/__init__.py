"""oar.inference: the inference API, following Paddle's ``paddle.inference``.

It wraps oar's C++ inference API (``oar_infer``, framework/include/oar/inference/predictor.h)::

    from oar import inference
    config = inference.Config("model.pdmodel", "model.pdiparams")
    config.disable_gpu()                    # or config.set_device("sim:0")
    config.set_cpu_math_library_num_threads(2)
    predictor = inference.create_predictor(config)
    h = predictor.get_input_handle(predictor.get_input_names()[0])
    h.copy_from_cpu(x)                      # a numpy array; its shape becomes the input's shape
    predictor.run()
    y = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    # or, in one call: [y] = predictor.run([x])

Models are PaddlePaddle's ``.pdmodel`` + ``.pdiparams`` (what ``paddle.jit.save`` and ``oar.jit.save``
write). A Predictor is not thread-safe: give each thread its own ``predictor.clone()`` (shares the
weights) or take them from a ``PredictorPool``. See docs/inference.md.
"""
from .. import _C

Config = _C._InferConfig
Predictor = _C._InferPredictor
Tensor = _C._InferTensor
PredictorPool = _C._InferPredictorPool
DataType = _C._InferDataType
PrecisionType = _C._InferPrecisionType
PlaceType = _C._InferPlaceType

for _cls, _name in ((Config, "Config"), (Predictor, "Predictor"), (Tensor, "Tensor"),
                    (PredictorPool, "PredictorPool"), (DataType, "DataType"),
                    (PrecisionType, "PrecisionType"), (PlaceType, "PlaceType")):
    _cls.__module__ = __name__
    _cls.__name__ = _name
    _cls.__qualname__ = _name
del _cls, _name


def create_predictor(config):
    """A Predictor for ``config`` (loads the program and its parameters)."""
    if not isinstance(config, Config):
        raise TypeError(f"create_predictor: expected an oar.inference.Config, got {type(config).__name__}")
    return Predictor(config)


def get_version():
    """The inference library's version string."""
    return _C._infer_get_version()


def get_num_bytes_of_data_type(dtype):
    """Bytes per element of a DataType."""
    return _C._infer_get_num_bytes_of_data_type(dtype)


__all__ = [
    "Config",
    "DataType",
    "PlaceType",
    "PrecisionType",
    "Predictor",
    "PredictorPool",
    "Tensor",
    "create_predictor",
    "get_num_bytes_of_data_type",
    "get_version",
]
