"""oar.device: choosing the device and asking about devices (Paddle's paddle.device)."""
from .._C import (get_all_custom_device_type, get_all_device_type, get_available_device, get_device,
                  max_memory_allocated, max_memory_reserved, memory_allocated, memory_reserved,
                  reset_max_memory_allocated, set_device, synchronize, empty_cache)

__all__ = ["set_device", "get_device", "get_all_device_type", "get_all_custom_device_type", "get_available_device",
           "synchronize", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_max_memory_allocated", "empty_cache"]
