"""Layer containers: Sequential, LayerList, LayerDict, ParameterList (Paddle's names and behaviour)."""
import collections

from ...framework.parameter import Parameter
from .layers import Layer

__all__ = ["Sequential", "LayerList", "LayerDict", "ParameterList"]


def _index(i, n, what):
    if not isinstance(i, int):
        raise TypeError("{} indices must be integers or slices, got {}".format(what, type(i).__name__))
    if not -n <= i < n:
        raise IndexError("{} index {} is out of range for length {}".format(what, i, n))
    return i + n if i < 0 else i


class Sequential(Layer):
    """Runs its layers in order. Sequential(l1, l2) names them "0", "1"; Sequential(("fc", l1), ...) or
    an OrderedDict gives them names."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], collections.OrderedDict):
            layers = tuple(layers[0].items())
        if layers and isinstance(layers[0], (list, tuple)):
            for item in layers:
                if not (isinstance(item, (list, tuple)) and len(item) == 2):
                    raise TypeError("Sequential: expected (name, layer) pairs, got {!r}".format(item))
                self.add_sublayer(str(item[0]), item[1])
        else:
            for i, layer in enumerate(layers):
                self.add_sublayer(str(i), layer)

    def __getitem__(self, name):
        if isinstance(name, slice):
            return self.__class__(*list(self._sub_layers.values())[name])
        if isinstance(name, str):
            return self._sub_layers[name]
        keys = list(self._sub_layers)
        return self._sub_layers[keys[_index(name, len(keys), "Sequential")]]

    def __setitem__(self, name, layer):
        if isinstance(name, int):
            keys = list(self._sub_layers)
            name = keys[_index(name, len(keys), "Sequential")]
        self.add_sublayer(str(name), layer)

    def __delitem__(self, name):
        if isinstance(name, int):
            keys = list(self._sub_layers)
            name = keys[_index(name, len(keys), "Sequential")]
        del self._sub_layers[name]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def forward(self, input):
        for layer in self._sub_layers.values():
            input = layer(input)
        return input


class LayerList(Layer):
    """A list of sublayers, registered (their parameters belong to the parent)."""

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            for i, layer in enumerate(sublayers):
                self.add_sublayer(str(i), layer)

    def __getitem__(self, idx):
        layers = list(self._sub_layers.values())
        if isinstance(idx, slice):
            return self.__class__(layers[idx])
        return layers[_index(idx, len(layers), "LayerList")]

    def __setitem__(self, idx, sublayer):
        idx = _index(idx, len(self), "LayerList")
        self.add_sublayer(str(idx), sublayer)

    def __delitem__(self, idx):
        layers = list(self._sub_layers.values())
        if isinstance(idx, slice):
            del layers[idx]
        else:
            del layers[_index(idx, len(layers), "LayerList")]
        self._sub_layers = collections.OrderedDict((str(i), l) for i, l in enumerate(layers))

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def append(self, sublayer):
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def insert(self, index, sublayer):
        layers = list(self._sub_layers.values())
        if not isinstance(index, int):
            raise TypeError("LayerList.insert: index must be an int, got {}".format(type(index).__name__))
        layers.insert(index, sublayer)
        self._sub_layers = collections.OrderedDict()
        for i, l in enumerate(layers):
            self.add_sublayer(str(i), l)

    def extend(self, sublayers):
        for layer in sublayers:
            self.append(layer)
        return self


class LayerDict(Layer):
    """An ordered dict of sublayers keyed by name."""

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, sublayer):
        self.add_sublayer(key, sublayer)

    def __delitem__(self, key):
        del self._sub_layers[key]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def __contains__(self, key):
        return key in self._sub_layers

    def clear(self):
        self._sub_layers.clear()

    def pop(self, key):
        return self._sub_layers.pop(key)

    def keys(self):
        return self._sub_layers.keys()

    def items(self):
        return self._sub_layers.items()

    def values(self):
        return self._sub_layers.values()

    def update(self, sublayers):
        if isinstance(sublayers, (dict, LayerDict)):
            items = sublayers.items()
        else:
            items = []
            for kv in sublayers:
                if not (isinstance(kv, (list, tuple)) and len(kv) == 2):
                    raise ValueError("LayerDict.update: expected (key, layer) pairs, got {!r}".format(kv))
                items.append(kv)
        for k, v in items:
            self.add_sublayer(k, v)


class ParameterList(Layer):
    """A list of parameters registered with the layer."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            for i, p in enumerate(parameters):
                self.add_parameter(str(i), p)

    def __getitem__(self, idx):
        params = list(self._parameters.values())
        return params[_index(idx, len(params), "ParameterList")]

    def __setitem__(self, idx, param):
        idx = _index(idx, len(self), "ParameterList")
        self.add_parameter(str(idx), param)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, parameter):
        if not isinstance(parameter, Parameter):
            raise TypeError("ParameterList.append: expected a Parameter, got {}".format(type(parameter).__name__))
        self.add_parameter(str(len(self)), parameter)
        return self
