"""DistributedStrategy: fleet's configuration (Paddle 2.x's paddle.distributed.fleet.DistributedStrategy).

Every field of Paddle's strategy is accepted with Paddle's default, so scripts that set them run; the
ones oar honours in dygraph collective mode are listed in HONOURED (docs/distributed.md, fleet). Setting
a name that is not a field raises TypeError as Paddle does; a `*_configs` key that is not one of the
field's keys, or a value of the wrong type, raises naming the field, the key and the value.
"""
import copy
import warnings

__all__ = ["DistributedStrategy"]

# Plain fields and Paddle's defaults (paddle/distributed/fleet/proto/distributed_strategy.proto, 2.6).
_FIELDS = {
    "amp": False, "recompute": False, "gradient_merge": False, "sharding": False, "pipeline": False,
    "tensor_parallel": False, "lamb": False, "lars": False, "dgc": False, "localsgd": False,
    "adaptive_localsgd": False, "a_sync": True, "find_unused_parameters": False, "fuse_all_reduce_ops": True,
    "fuse_grad_size_in_MB": 32, "last_comm_group_size_MB": 1.0, "sync_batch_norm": False, "nccl_comm_num": 1,
    "without_graph_optimization": True, "fuse_grad_merge": False, "heter_ccl_mode": False,
    "sync_nccl_allreduce": True, "use_hierarchical_allreduce": False, "hierarchical_allreduce_inter_nranks": 1,
    "asp": False, "qat": False, "elastic": False, "auto": False, "semi_auto": False,
    "cudnn_exhaustive_search": False, "conv_workspace_size_limit": 512, "cudnn_batchnorm_spatial_persistent": False,
    "split_data": True, "auto_search": False, "fp16_allreduce": False, "is_fl_ps_mode": False,
    "is_with_coordinator": False, "fuse_grad_size_in_num": 8, "fuse_grad_size_in_TFLOPS": 50.0,
}

# The `*_configs` fields: key -> default (the type of the default is the type a value must have).
_CONFIGS = {
    "amp_configs": {"init_loss_scaling": 32768.0, "incr_every_n_steps": 1000, "decr_every_n_nan_or_inf": 2,
                    "incr_ratio": 2.0, "decr_ratio": 0.8, "use_dynamic_loss_scaling": True,
                    "custom_white_list": [], "custom_black_list": [], "custom_black_varnames": [],
                    "use_pure_fp16": False, "use_fp16_guard": True, "use_optimizer_fp16": False,
                    "use_pure_bf16": False},
    "recompute_configs": {"checkpoints": [], "enable_offload": False, "checkpoint_shape": [],
                          "enable_tuning": False, "refined_ops_patterns": []},
    "gradient_merge_configs": {"k_steps": 1, "avg": True},
    "sharding_configs": {"sharding_segment_strategy": "segment_broadcast_MB", "segment_broadcast_MB": 32.0,
                         "segment_anchors": [], "sharding_degree": 8, "mp_degree": 1, "dp_degree": 1,
                         "hybrid_dp": False, "gradient_merge_acc_step": 1, "optimize_offload": False,
                         "pp_allreduce_in_optimize": False, "pp_degree": 1, "optimize_cast": False,
                         "_dp_as_optimizer_sharding": False, "stage": 1, "enable_tuning": False,
                         "use_calc_stream": False},
    "hybrid_configs": {"dp_degree": -1, "mp_degree": 1, "pp_degree": 1, "sharding_degree": 1, "sep_degree": 1,
                       "order": ["dp", "pp", "sharding", "sep", "mp"], "mp_configs": {}, "pp_configs": {},
                       "sharding_configs": {}},
    "pipeline_configs": {"micro_batch_size": 1, "accumulate_steps": 1, "schedule_mode": "1F1B",
                         "p2p_cache_shape": True, "enable_partial_send_recv": True},
    "tensor_parallel_configs": {"tensor_parallel_degree": 1, "tensor_init_seed": -1},
    "lamb_configs": {"lamb_weight_decay": 0.01, "exclude_from_weight_decay": []},
    "lars_configs": {"lars_coeff": 0.001, "lars_weight_decay": 0.0005, "epsilon": 0.0,
                     "exclude_from_weight_decay": []},
    "localsgd_configs": {"k_steps": 1, "begin_step": 1},
    "adaptive_localsgd_configs": {"init_k_steps": 1, "begin_step": 1},
    "dgc_configs": {"rampup_begin_step": 0, "rampup_step": 1, "sparsity": []},
    "gradient_scale_configs": {"scale_strategy": "avg", "scale_gradient": False},
    "a_sync_configs": {"k_steps": -1, "max_merge_var_num": 1, "send_queue_size": 16,
                       "independent_recv_thread": False, "min_send_grad_num_before_recv": 1,
                       "thread_pool_size": 1, "send_wait_times": 1, "runtime_split_send_recv": False,
                       "launch_barrier": True, "heter_worker_device_guard": "cpu", "lr_decay_steps": 10,
                       "use_ps_gpu": 0, "use_gpu_graph": 0},
}

# Other objects Paddle's strategy carries (static-graph settings): accepted, kept, unused.
_OBJECTS = ("build_strategy", "execution_strategy", "sparse_table_configs", "fs_client_param",
            "trainer_desc_configs", "qat_configs", "hybrid_parallel_order", "sync_param_name")

# What oar honours in dygraph collective mode; every other True field is accepted with a warning.
HONOURED = ("gradient_merge", "sharding", "recompute", "find_unused_parameters", "fuse_grad_size_in_MB",
            "last_comm_group_size_MB", "a_sync", "fuse_all_reduce_ops", "without_graph_optimization",
            "split_data", "sync_nccl_allreduce", "nccl_comm_num")


def _check_value(owner, key, default, value):
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, str):
        ok = isinstance(value, str)
    elif isinstance(default, list):
        ok = isinstance(value, (list, tuple))
        value = list(value) if ok else value
    else:  # nested dicts (hybrid_configs' mp_configs, ...)
        ok = isinstance(value, dict)
    if not ok:
        raise TypeError(f"DistributedStrategy.{owner}: {key} must be of type {type(default).__name__}, "
                        f"got {value!r}")
    return value


class DistributedStrategy:
    """fleet's configuration: plain fields (`strategy.gradient_merge = True`) and `*_configs` dicts
    (`strategy.gradient_merge_configs = {"k_steps": 4}`: only the given keys change). Reading a
    `*_configs` field gives a copy."""

    def __init__(self):
        object.__setattr__(self, "_values", dict(_FIELDS))
        object.__setattr__(self, "_configs", copy.deepcopy(_CONFIGS))
        object.__setattr__(self, "_objects", {k: None for k in _OBJECTS})
        self._objects["hybrid_parallel_order"] = ["dp", "pp", "sharding", "sep", "mp"]
        self._objects["sync_param_name"] = ["embedding", "layer_norm", ".b_"]

    def __getattr__(self, key):
        d = self.__dict__
        if key in d.get("_values", ()):
            return d["_values"][key]
        if key in d.get("_configs", ()):
            return copy.deepcopy(d["_configs"][key])
        if key in d.get("_objects", ()):
            return d["_objects"][key]
        raise AttributeError(f"'DistributedStrategy' object has no attribute '{key}'")

    def __setattr__(self, key, value):
        if key in self._values:
            self._values[key] = _check_value("", key, _FIELDS[key], value)
        elif key in self._configs:
            if not isinstance(value, dict):
                raise TypeError(f"DistributedStrategy: {key} must be a dict, got {type(value).__name__}")
            conf = self._configs[key]
            for k, v in value.items():
                if k not in _CONFIGS[key]:
                    raise ValueError(f"DistributedStrategy: key {k!r} is not in {key} "
                                     f"(its keys: {', '.join(sorted(_CONFIGS[key]))})")
                conf[k] = _check_value(key, k, _CONFIGS[key][k], v)
            if key == "hybrid_configs" and "order" in value:
                self._objects["hybrid_parallel_order"] = list(value["order"])
        elif key in self._objects:
            self._objects[key] = value
        else:  # Paddle's error for a name that is not a field
            raise TypeError(f"{key} is not a attribute of DistributedStrategy")

    def _unhonoured(self):
        """The fields set to True that oar does not honour (each is warned about by fleet)."""
        return [k for k, v in self._values.items() if v is True and k not in HONOURED and _FIELDS[k] is not True]

    def _warn_unhonoured(self):
        for k in self._unhonoured():
            warnings.warn(f"fleet: DistributedStrategy.{k}=True is accepted but not honoured by oar yet "
                          "(docs/distributed.md, fleet)", stacklevel=3)

    def __repr__(self):
        changed = {k: v for k, v in self._values.items() if v != _FIELDS[k]}
        for k, conf in self._configs.items():
            diff = {kk: vv for kk, vv in conf.items() if vv != _CONFIGS[k][kk]}
            if diff:
                changed[k] = diff
        return f"DistributedStrategy({', '.join(f'{k}={v!r}' for k, v in changed.items())})"
