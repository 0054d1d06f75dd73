"""ParamAttr: how a layer creates one of its parameters (Paddle's paddle.ParamAttr)."""

__all__ = ["ParamAttr"]


class ParamAttr:
    """Name, initializer, learning-rate multiplier, regularizer, trainability and clipping of a parameter.

    Layers accept a ParamAttr, a str (the name), an Initializer, None (defaults) or False (no parameter,
    e.g. bias_attr=False) wherever Paddle takes `weight_attr` / `bias_attr`.
    """

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None, trainable=True,
                 do_model_average=True, need_clip=True):
        if name is not None and not isinstance(name, str):
            raise TypeError("ParamAttr: name must be a str, got {}".format(type(name).__name__))
        if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise TypeError("ParamAttr: learning_rate must be a number, got {!r}".format(learning_rate))
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.do_model_average = do_model_average
        self.need_clip = bool(need_clip)

    def __repr__(self):
        return "ParamAttr(name={!r}, initializer={!r}, learning_rate={}, regularizer={!r}, trainable={}, need_clip={})".format(
            self.name, self.initializer, self.learning_rate, self.regularizer, self.trainable, self.need_clip)

    @staticmethod
    def _to_attr(arg):
        """Normalises a weight_attr/bias_attr argument: a ParamAttr, or False for "no parameter"."""
        from ..nn.initializer import Initializer
        if arg is None:
            return ParamAttr()
        if arg is False:
            return False
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if arg is True:
            return ParamAttr()
        raise TypeError("expected a ParamAttr, a name, an Initializer, None or False as a parameter attribute, "
                        "got {!r}".format(arg))
