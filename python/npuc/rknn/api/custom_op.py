"""``from npuc.rknn.api.custom_op import get_node_attr``: the spelling of RKNN-Toolkit2's
``rknn.api.custom_op`` (see :mod:`npuc.custom_op`)."""

from npuc.custom_op import get_node_attr

__all__ = ["get_node_attr"]
