"""``from npuc.rknn.api import RKNN``: the spelling of ``from rknn.api import RKNN`` (see :mod:`npuc.rknn`)."""

from npuc.rknn import RKNN

__all__ = ["RKNN"]
