"""The front door: :class:`AsyncMemory` (the core) and :class:`Memory` (its sync facade).

Both expose the same methods with the same signatures (a test keeps them in step); ``Memory``
runs the async core on a private event-loop thread, so it also works inside programs that
already run an event loop (notebooks, web servers).
"""

from memvault.memory._async import AsyncMemory, WriteResult, register_remote
from memvault.memory._sync import Memory, SyncLearning, SyncMemoryTools

__all__ = [
    "AsyncMemory",
    "Memory",
    "SyncLearning",
    "SyncMemoryTools",
    "WriteResult",
    "register_remote",
]
