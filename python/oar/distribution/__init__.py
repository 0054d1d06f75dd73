"""oar.distribution: probability distributions, transforms and KL divergences with PaddlePaddle 2.6's
API (paddle.distribution), plus Exponential and Gamma (Paddle 3.x's classes). See docs/distribution.md."""
from .distribution import Distribution
from .exponential_family import ExponentialFamily
from .continuous import Normal, Uniform, Laplace, Cauchy, Exponential, Gamma, Beta, Dirichlet, LogNormal, Gumbel
from .discrete import Bernoulli, Categorical, Geometric, Multinomial
from .independent import Independent
from .transformed_distribution import TransformedDistribution
from .kl import kl_divergence, register_kl
from .transform import (Transform, AbsTransform, AffineTransform, ChainTransform, ExpTransform,
                        IndependentTransform, PowerTransform, ReshapeTransform, SigmoidTransform,
                        SoftmaxTransform, StackTransform, StickBreakingTransform, TanhTransform)
from . import transform, kl, variable

__all__ = ["Bernoulli", "Beta", "Categorical", "Cauchy", "Dirichlet", "Distribution", "ExponentialFamily",
           "Multinomial", "Normal", "Uniform", "kl_divergence", "register_kl", "Independent",
           "TransformedDistribution", "Laplace", "LogNormal", "Gumbel", "Geometric", "Exponential", "Gamma",
           "Transform", "AbsTransform", "AffineTransform", "ChainTransform", "ExpTransform",
           "IndependentTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "StackTransform", "StickBreakingTransform", "TanhTransform"]
