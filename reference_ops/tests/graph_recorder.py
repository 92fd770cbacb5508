"""A torch.compile backend that keeps what the traced graphs call: the tests that check which ops a
compiled graph holds (the kernels' ops, or none of them: the ops' math) share it."""

from __future__ import annotations

from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd


class GraphRecorder:
    """An aot_autograd backend (``.backend``) that runs the graphs as traced and keeps their call
    targets: ``.forward`` and ``.backward``, one string per call_function node."""

    def __init__(self) -> None:
        self.forward: list[str] = []
        self.backward: list[str] = []
        self.backend = aot_autograd(fw_compiler=self._recorder(self.forward), bw_compiler=self._recorder(self.backward))

    @staticmethod
    def _recorder(targets: list[str]):
        def compiler(gm, _inputs):
            targets.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
            return make_boxed_func(gm.forward)

        return compiler

    @property
    def targets(self) -> list[str]:
        return self.forward + self.backward

    def ours(self) -> list[str]:
        """The reference_ops ops among the targets."""
        return [t for t in self.targets if t.startswith("reference_ops.")]

    def __repr__(self) -> str:
        return f"GraphRecorder(forward={self.forward}, backward={self.backward})"

    def clear(self) -> None:
        self.forward.clear()
        self.backward.clear()
