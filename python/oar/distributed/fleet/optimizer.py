"""fleet.distributed_optimizer and gradient merge (k-step gradient accumulation)."""
from ...autograd import no_grad
from ...optimizer import Optimizer

__all__ = ["GradientMergeOptimizer", "distributed_optimizer"]


class GradientMergeOptimizer:
    """Steps the wrapped optimizer on every k-th step() only, with the gradients accumulated over those k
    backward passes, averaged (avg=True) or summed. clear_grad() between the k-th calls keeps them, so a
    loop of backward / step / clear_grad over k micro-batches equals one step on their concatenation
    (with avg=True and a mean loss). Other attributes are the wrapped optimizer's."""

    def __init__(self, optimizer, k_steps, avg=True):
        if isinstance(k_steps, bool) or not isinstance(k_steps, int) or k_steps < 1:
            raise ValueError(f"gradient merge: gradient_merge_configs['k_steps'] must be an int >= 1, got {k_steps!r}")
        if not isinstance(avg, bool):
            raise TypeError(f"gradient merge: gradient_merge_configs['avg'] must be a bool, got {avg!r}")
        self._inner_opt = optimizer
        self._k_steps = k_steps
        self._avg = avg
        self._calls = 0  # step() calls so far

    def _at_boundary(self):
        return self._calls % self._k_steps == 0

    def step(self):
        self._calls += 1
        if not self._at_boundary():
            return
        if self._avg and self._k_steps > 1:
            with no_grad():
                for p in self._inner_opt._all_params():
                    if p.grad is not None:
                        p.grad.scale_(1.0 / self._k_steps)
        self._inner_opt.step()

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """Dygraph minimize (backward must have run): step() with the merge rule."""
        if parameters is not None or no_grad_set is not None:
            raise NotImplementedError("gradient merge: minimize(parameters=..., no_grad_set=...) is not "
                                      "supported; call step()")
        params_grads = [(p, p.grad) for p in self._inner_opt._all_params() if p.grad is not None]
        self.step()
        return None, params_grads

    def clear_grad(self, set_to_zero=True):
        """Clears the gradients after the k-th step only (before it they are still accumulating)."""
        if self._at_boundary():
            self._inner_opt.clear_grad(set_to_zero)

    clear_gradients = clear_grad

    def zero_grad(self, set_to_none=True):
        self.clear_grad(set_to_zero=not set_to_none)

    def __getattr__(self, name):
        return getattr(self.__dict__["_inner_opt"], name)


def _sharding_stage(strategy, world):
    """The sharding stage the strategy asks for (0: none)."""
    hybrid = strategy.hybrid_configs["sharding_degree"]
    if strategy.sharding:
        stage = strategy.sharding_configs["stage"]
    elif hybrid > 1:
        stage = 1  # Paddle's dygraph hybrid sharding (DygraphShardingOptimizer) is stage 1
    else:
        return 0
    if stage not in (1, 2):
        raise NotImplementedError(f"fleet: sharding stage {stage} is not implemented (sharding_configs['stage'] "
                                  "must be 1 or 2)")
    if hybrid > 1 and hybrid != world:
        raise NotImplementedError(f"fleet: hybrid_configs['sharding_degree']={hybrid} must be 1 or the world size "
                                  f"({world}): sharding combined with data parallel is not implemented")
    return stage


def distributed_optimizer(optimizer, strategy=None):
    """Wraps `optimizer` as fleet's strategy says (the one given here, else fleet.init's): sharding stage 1 or
    2 (strategy.sharding with sharding_configs['stage'], or hybrid_configs['sharding_degree'] equal to the
    world size) through group sharding, then gradient merge (strategy.gradient_merge with
    gradient_merge_configs {'k_steps', 'avg'}). Without either it returns `optimizer` itself (the model's
    DataParallel wrapper already averages the gradients)."""
    from . import _fleet
    from ..sharding.group_sharded import GroupShardedOptimizer
    from .strategy import DistributedStrategy
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"fleet.distributed_optimizer: optimizer must be an oar.optimizer.Optimizer, got "
                        f"{type(optimizer).__name__}")
    if strategy is None:
        strategy = _fleet._require_init("distributed_optimizer")
    elif not isinstance(strategy, DistributedStrategy):
        raise TypeError(f"fleet.distributed_optimizer: strategy must be a DistributedStrategy, got "
                        f"{type(strategy).__name__}")
    world = _fleet.worker_num()
    opt = optimizer
    stage = _sharding_stage(strategy, world)
    if stage:
        opt = GroupShardedOptimizer(opt, "os" if stage == 1 else "os_g")
    if strategy.gradient_merge:
        conf = strategy.gradient_merge_configs
        if conf["k_steps"] > 1:
            opt = GradientMergeOptimizer(opt, conf["k_steps"], conf["avg"])
    return opt
