"""The RKNN-Toolkit2-style workflow: ``config -> load_onnx -> build -> export -> inference``.

Users of RKNN-Toolkit2 can keep their scripts: method names, argument names and the "return 0 on
success" convention are the same. Unlike RKNN-Toolkit2, failures raise an :class:`npuc.NpucError`
subclass naming the problem; :class:`npuc.rknn.RKNN` is the same toolkit with RKNN's failure
convention (``-1`` or ``None`` and a logged error), for scripts whose error branches should run.
RKNN calls npuc has no counterpart for raise :class:`npuc.NotSupportedError` (:mod:`npuc.rknn_only`).

``build`` runs the graph optimizer (and INT8 quantization where available), ``eval_perf`` reports
simulated per-layer NPU cycles, ``export_blob`` / ``load_blob`` write and verify ``.npub`` files,
and ``inference`` runs on the host.
"""

from __future__ import annotations

import logging
import numbers
import os
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from npuc import _npuc
from npuc._npuc import Model, Runtime, optimize
from npuc import arg_check, batch as batching, core_mask, dynamic_input, qdq_import
from npuc.config_check import (
    check_config_values,
    check_op_target_names,
    check_quantized_dtype_for_soc,
    inert_settings,
    known_target_platforms,
)
from npuc.dataset import dataset_files, fitting_layout
from npuc.errors import (ConfigError, InputError, ModelLoadError, NotSupportedError, NpucError,
                         UnsupportedOpError)
from npuc.input_dtype import as_array, coerce_input
from npuc.messages import MAX_SHOWN_PATH, shown, shown_key
from npuc.onnx_rebatch import load_at_batch, rebatched_to
from npuc.shapes import check_shapes
from npuc.output_files import AppendedLog, JobInputs, atomic_output, onnx_external_files, refuse_output, staged_folder
from npuc.preprocess import InputPreprocessor
from npuc.rknn_only import RknnOnlyCalls
from npuc.session import Stage, require
from npuc.verify import verify_optimization

if TYPE_CHECKING:  # pragma: no cover
    from npuc.memory import MemoryReport
    from npuc.perf import PerfReport

__all__ = ["Toolkit", "TARGET_PLATFORMS", "CONFIG_KEYS"]

#: The built-in SoCs ``config(target_platform=...)`` accepts (RKNN-Toolkit2 spelling,
#: case-insensitive); aliases and ``NPUC_SOC_DIR`` profiles are accepted too.
TARGET_PLATFORMS = ("rk3562", "rk3566", "rk3568", "rk3576", "rk3588", "rv1103", "rv1106")

#: Every key ``config()`` accepts: RKNN-Toolkit2's config parameters. Keys this milestone does not
#: act on yet are validated by name only and stored for the build stage.
CONFIG_KEYS = (
    "target_platform",
    "mean_values",
    "std_values",
    "quant_img_RGB2BGR",
    "quantized_dtype",
    "quantized_algorithm",
    "quantized_method",
    "quantized_hybrid_level",
    "float_dtype",
    "optimization_level",
    "custom_string",
    "remove_weight",
    "compress_weight",
    "inputs_yuv_fmt",
    "single_core_mode",
    "dynamic_input",
    "model_pruning",
    "op_target",
    "quantize_weight",
    "remove_reshape",
    "sparse_infer",
    "enable_flash_attention",
    "auto_hybrid_cos_thresh",
    "auto_hybrid_euc_thresh",
    # npuc's own: graph passes to skip by name (see npuc.pass_names()).
    "disable_passes",
    "hybrid_layers",
)

#: RKNN-Toolkit2's init_runtime options that act on a board, with their defaults. npuc accepts
#: them (a script passes them) and warns when one is set to something else.
RKNN_BOARD_OPTIONS: Dict[str, Any] = {"device_id": None, "perf_debug": False, "eval_mem": False,
                                      "async_mode": False, "core_mask": 0, "fallback_prior_device": "cpu"}

#: ``inference(data_format=...)`` values: the array layout of a 4-D input ('auto': its shape decides).
DATA_FORMATS = ("auto", "nchw", "nhwc")

ArrayLike = Union[np.ndarray, Sequence[Any]]
Shape = Sequence[int]


class Toolkit(RknnOnlyCalls):
    """One model's trip through npuc, in RKNN-Toolkit2's order.

    ``NPU_CORE_AUTO`` ... ``NPU_CORE_ALL``: RKNN's ``init_runtime(core_mask=...)`` values
    (npuc.core_mask); eval_perf then places the program on that many cores.

    Usable as a context manager, which calls :meth:`release` on exit::

        with npuc.Toolkit() as tk:
            tk.config(mean_values=[[0, 0, 0]], std_values=[[255, 255, 255]])
            tk.load_onnx(model="model.onnx")
            outputs = tk.inference(inputs=[image])
    """

    NPU_CORE_AUTO = core_mask.NPU_CORE_AUTO
    NPU_CORE_0 = core_mask.NPU_CORE_0
    NPU_CORE_1 = core_mask.NPU_CORE_1
    NPU_CORE_2 = core_mask.NPU_CORE_2
    NPU_CORE_0_1 = core_mask.NPU_CORE_0_1
    NPU_CORE_0_1_2 = core_mask.NPU_CORE_0_1_2
    NPU_CORE_ALL = core_mask.NPU_CORE_ALL

    def __init__(self, verbose: bool = False, verbose_file: Optional[str] = None) -> None:
        """Creates an empty toolkit.

        Args:
            verbose: log each step to stderr.
            verbose_file: also (or only, when ``verbose`` is False) log to this file (appended).
                It must not be a file the toolkit reads: loading it as the model, the dataset
                or another input raises OutputError, and the lines logged to it are taken back.
        """
        #: The files the current job reads (model, dataset and what it lists, ...): no output
        #: of this toolkit may replace one of them (npuc.output_files).
        self._inputs = JobInputs()
        self._log = _make_logger(self, verbose, verbose_file)
        #: What the session holds (npuc.session): decides which calls are accepted.
        self._stage = Stage.EMPTY
        self._config: Dict[str, Any] = {"quant_img_RGB2BGR": False}
        self._model: Optional[Model] = None
        self._runtime: Optional[Runtime] = None
        # init_runtime(max_run_bytes=...): the cap inference() passes to the runtime (None: the
        # NPUC_MAX_RUN_BYTES environment variable, read by the runtime at each run).
        self._max_run_bytes: Optional[int] = None
        self._preprocessor = InputPreprocessor(None, None)
        # The model as imported, kept after build() so verify and rebuilds start from it.
        self._float_model: Optional[Model] = None
        #: NPU/CPU placement on the target after the last build() (a dict; ``["text"]`` prints it).
        self.partition_report: Optional[Dict[str, Any]] = None
        #: Metadata of the last loaded blob (format version, producer, SoC, options, digest).
        self.blob_meta: Optional[Dict[str, Any]] = None
        #: The last build()'s optimization report (a dict; ``["text"]`` is the printable form).
        self.optimization_report: Optional[Dict[str, Any]] = None
        #: What the last build(auto_hybrid=True) moved to FP16 and why (npuc.hybrid.AutoHybridReport).
        self.auto_hybrid_report: Optional[Any] = None
        #: Wall seconds per calibration stage of the last build(do_quantization=True) without
        #: auto_hybrid (npuc.quantize.quantize's ``timings``: read, inputs, forward, statistics,
        #: search, plan, simulator); None otherwise.
        self.calibration_timings: Optional[Dict[str, float]] = None
        #: What the last build() of a QDQ model kept of the file's parameters (npuc.qdq_import.build).
        self.qdq_report: Optional[Dict[str, Any]] = None
        #: The last accuracy_analysis() (npuc.accuracy.AccuracyReport: rows, table text, dump folder).
        self.accuracy_report: Optional[Any] = None
        # The loaded model's file stem: hybrid_quantization_step1 names its files after it.
        self._model_name = "model"
        # build(do_quantization=False) leaves a float model, which the NPU runs in fp16.
        self._built_float = False
        # reg_custom_op(): the user's op objects by op type, and the core's set built from them,
        # which every later load hands to the graph it makes (npuc.custom_op).
        self._custom_ops: Dict[str, Any] = {}
        self._custom_set: Optional[Any] = None
        # load_onnx(qdq_strict=...): how build() treats a QDQ model's weights it cannot keep exactly.
        self._qdq_strict = False
        # Re-imports the loaded model at other input shapes (issue #18: config(dynamic_input) sets,
        # build(rknn_batch_size)); None for a loader whose graph has fixed shapes.
        self._reload: Optional[Callable[[List[Shape]], Any]] = None
        # The batch load_onnx / load_pytorch's input_size_list set (1: the file's own dim 0);
        # read only while _reload is set (issue #18).
        self._loaded_batch = 1
        #: The batch the last build() made (its inputs' dim 0): rknn_batch_size or input_size_list's.
        self.built_batch = 1
        # What build() passed to optimize(), so _specialized() optimizes another shape the same way.
        self._optimize_args: Optional[Dict[str, Any]] = None
        # config(dynamic_input): (set 0's model, [(shapes, model, simulator) per set]) after a build
        # or load_blob with several sets; stale once self._model is another (npuc.dynamic_input).
        self._shape_sets: Optional[Tuple[Any, List[Tuple[List[Shape], Any, Any]]]] = None
        # init_runtime(core_mask=...)'s value (RKNN's); None before init_runtime: eval_perf then uses
        # every core of the SoC (one with single_core_mode).
        self._runtime_mask: Optional[int] = None

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> "Toolkit":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        _close_logger(self._log)

    def __del__(self) -> None:
        log = getattr(self, "_log", None)
        if log is not None:
            _close_logger(log)

    # ------------------------------------------------------------------ workflow

    def config(
        self,
        target_platform: Optional[str] = None,
        mean_values: Optional[Sequence[Sequence[float]]] = None,
        std_values: Optional[Sequence[Sequence[float]]] = None,
        quant_img_RGB2BGR: bool = False,
        **kwargs: Any,
    ) -> int:
        """Sets the model's preprocessing and build options (RKNN-Toolkit2 ``config``).

        Args:
            target_platform: the SoC to build for: one of :data:`TARGET_PLATFORMS`, an alias
                (``rk3588s``), or a profile added through ``NPUC_SOC_DIR`` (``npuc socs`` lists them).
            mean_values: per input, one value per channel subtracted before inference.
            std_values: per input, one value per channel the input is divided by after that.
            quant_img_RGB2BGR: whether calibration images are converted RGB -> BGR when they are
                read (affects quantization only, never ``inference`` inputs).
            **kwargs: any other RKNN-Toolkit2 config key (:data:`CONFIG_KEYS`), stored for later
                stages.

        Each call replaces the whole configuration (as RKNN-Toolkit2's does): a key not passed
        again returns to its default, and a warning names the settings that were dropped.

        Returns:
            0 on success.

        Raises:
            ConfigError: an unknown key or an invalid value, named in the message with the valid
                keys or values (see :mod:`npuc.config_check`).
        """
        unknown = sorted(set(kwargs) - set(CONFIG_KEYS))
        if unknown:
            raise ConfigError(
                f"unknown config key(s) {', '.join(shown_key(k) for k in unknown)}; valid keys: {', '.join(CONFIG_KEYS)}"
            )
        if target_platform is not None:
            platforms = known_target_platforms()  # the built-in ones plus NPUC_SOC_DIR profiles
            if not isinstance(target_platform, str) or target_platform.lower() not in platforms:
                raise ConfigError(
                    f"target_platform {shown(target_platform)} is not supported; choose one of {', '.join(platforms)}"
                )
            target_platform = target_platform.lower()
        check_config_values(dict(kwargs, quant_img_RGB2BGR=quant_img_RGB2BGR))
        check_quantized_dtype_for_soc(target_platform, kwargs.get("quantized_dtype"))
        preprocessor = InputPreprocessor(mean_values, std_values)  # validates before storing
        # Each call replaces the whole configuration, as in RKNN-Toolkit2 (every key of its config()
        # has a default); settings the new call drops are named, never lost silently.
        config = dict(kwargs, target_platform=target_platform, mean_values=mean_values, std_values=std_values,
                      quant_img_RGB2BGR=bool(quant_img_RGB2BGR))
        dropped = sorted(k for k, v in self._config.items() if v not in (None, False) and config.get(k) in (None, False))
        if dropped:
            self._log.warning("config() replaces the previous configuration, as in RKNN-Toolkit2; no longer set: %s "
                              "(pass every setting in one call)", ", ".join(dropped))
        self._config = config
        self._preprocessor = preprocessor
        for sentence in inert_settings(config):
            self._log.warning("%s", sentence)
        self._log.info("config: %s", {k: v for k, v in self._config.items() if v is not None})
        return 0

    def reg_custom_op(self, custom_op: Any) -> int:
        """Registers a user-defined op (RKNN-Toolkit2 ``reg_custom_op``); call it before loading.

        ``custom_op`` has RKNN's shape: an ``op_type`` string, ``shape_infer(node, in_shapes,
        in_dtypes) -> (out_shapes, out_dtypes)`` and ``compute(node, inputs) -> [outputs]`` (numpy;
        ``node`` is the ``onnx.NodeProto``, see :func:`npuc.custom_op.get_node_attr`). Nodes of that
        op type, in any ONNX domain, then load, build and run: on the CPU, in float. A blob written
        from such a model keeps the op by name, and ``load_blob`` needs the same registration.

        Returns:
            0 on success.

        Raises:
            ConfigError: the object lacks ``op_type``, ``shape_infer`` or ``compute``, or its op type
                is one npuc already defines.
        """
        from npuc.custom_op import check_custom_op, custom_op_set

        op_type = check_custom_op(custom_op)
        ops = dict(self._custom_ops)
        if op_type in ops:
            self._log.warning("reg_custom_op: %s was registered before; the new definition replaces it", op_type)
        ops[op_type] = custom_op
        self._custom_set = custom_op_set(list(ops.values()))  # refuses a built-in op's name
        self._custom_ops = ops
        self._log.info("reg_custom_op: %s (runs on the CPU)", op_type)
        return 0

    def load_onnx(
        self,
        model: Union[str, os.PathLike, bytes],
        inputs: Optional[Sequence[str]] = None,
        input_size_list: Optional[Sequence[Shape]] = None,
        outputs: Optional[Sequence[str]] = None,
        qdq_strict: bool = False,
    ) -> int:
        """Imports an ONNX model (RKNN-Toolkit2 ``load_onnx``).

        An already-quantized model (QuantizeLinear / DequantizeLinear pairs, QLinearConv /
        QLinearMatMul: QAT and PTQ exports, npuc's own ``export_onnx``) is recognized: its Q/DQ
        nodes are stripped and the scales and zero points they carry are kept for ``build``,
        which then needs no dataset (docs/qdq_import.md).

        Args:
            model: path of the ``.onnx`` file (or its serialized bytes).
            inputs: names of the inputs ``input_size_list`` refers to (default: all, in order).
            input_size_list: one full shape per input, fixing dynamic dimensions.
            outputs: cut the model so these tensors are its outputs.
            qdq_strict: for a QDQ model, refuse a Q/DQ pattern npuc cannot map (UnsupportedOpError
                naming the node and the pattern; by default the model then loads with its Q/DQ
                nodes as ops, and a warning), and refuse at build (ConfigError) a weight npuc
                cannot keep exactly (asymmetric, holding -128, scales along another axis) instead
                of requantizing it symmetric and reporting the error it makes.

        Returns:
            0 on success.

        Raises:
            ModelLoadError: the file is missing, unreadable or not a valid ONNX model.
            UnsupportedOpError, ShapeError, GraphError: the model cannot be compiled as it is
                (with ``qdq_strict``: a QDQ pattern npuc cannot map, named with its node).
        """
        qdq_strict = arg_check.flag("load_onnx", "qdq_strict", qdq_strict)
        names = arg_check.names("load_onnx", "inputs", inputs) or []
        sizes = [] if input_size_list is None else check_shapes(input_size_list, "load_onnx(input_size_list)")
        if input_size_list is None and self._config.get("dynamic_input"):
            # RKNN's dynamic_input needs no input_size_list: the model loads at set 0 (build re-imports each set).
            sizes = check_shapes(self._config["dynamic_input"][0], "config(dynamic_input)[0]")
        outs = arg_check.names("load_onnx", "outputs", outputs) or []
        if isinstance(model, (bytes, bytearray)):
            job = self._new_job([])
            loaded = load_at_batch(self._onnx_loader(qdq_strict), bytes(model), names, sizes, outs)
        else:
            path = arg_check.path("load_onnx", "model", model)
            if not os.path.isfile(path):
                raise ModelLoadError(f"cannot open model {shown(path, MAX_SHOWN_PATH)}: no such file")
            job = self._new_job([(path, "the loaded model")]
                                + [(f, "external data of the model") for f in onnx_external_files(path)])
            loaded = load_at_batch(self._onnx_loader(qdq_strict), path, names, sizes, outs)
        self._qdq_strict = qdq_strict
        source = bytes(model) if isinstance(model, (bytes, bytearray)) else path
        self._inputs = job
        self._model, self._runtime, self._float_model = loaded, None, None
        self._reload = partial(_reload_onnx, source, names, outs, self._custom_set, qdq_strict, self._log)
        self._loaded_batch = rebatched_to(source, names, sizes)
        self._stage = Stage.LOADED
        self._model_name = "model" if isinstance(model, (bytes, bytearray)) else Path(os.fspath(model)).stem
        self._log.info("load_onnx: %d nodes, inputs %s", loaded.num_nodes, _io_summary(loaded.inputs))
        return 0

    def _onnx_loader(self, strict: bool) -> Callable[..., Any]:
        """load_onnx's import as ``load(source, names, sizes, outputs)``."""
        return partial(_load_onnx, custom_ops=self._custom_set, strict=strict, log=self._log)

    def load_pytorch(
        self,
        model: Any,
        input_size_list: Sequence[Shape],
        inputs: Optional[Sequence[str]] = None,
        outputs: Optional[Sequence[str]] = None,
        opset: int = 13,
    ) -> int:
        """Imports a PyTorch model (RKNN-Toolkit2 ``load_pytorch``) by exporting it through ``torch.onnx``.

        Args:
            model: a ``torch.nn.Module``, or the path of a TorchScript ``.pt`` file (what RKNN takes).
            input_size_list: one full shape per ``forward()`` argument, e.g. ``[[1, 3, 224, 224]]``.
            inputs: names for the model's inputs (default ``input0``, ``input1``, ...).
            outputs: names for the model's outputs (default: torch's).
            opset: the ONNX opset the export targets.

        Returns:
            0 on success.

        Raises:
            ConfigError: PyTorch is not installed (the message says what to install), or a bad argument.
            ModelLoadError: the ``.pt`` file is missing or unreadable, or ``torch.onnx.export`` failed.
        """
        from npuc.pytorch_import import pytorch_to_onnx

        is_path = isinstance(model, (str, os.PathLike))
        job = self._new_job([(os.fspath(model), "the loaded model")] if is_path else [])
        onnx_bytes, names = pytorch_to_onnx(model, input_size_list, inputs, outputs, opset)
        self.load_onnx(onnx_bytes, inputs=names, input_size_list=input_size_list)
        self._reload = partial(_reload_pytorch, model, inputs, outputs, opset, self._custom_set, self._log)
        # PyTorch exports at the given shapes, so a dim 0 above 1 shared by every input is a batch.
        self._loaded_batch = batching.loaded_batch([{"shape": s} for s in input_size_list])
        self._inputs = job
        return 0

    def load_darknet(self, model: Union[str, os.PathLike], weight: Union[str, os.PathLike]) -> int:
        """Imports a Darknet network (RKNN-Toolkit2 ``load_darknet``): its ``.cfg`` and ``.weights``.

        The graph's input is ``data`` [1, C, H, W] at the ``[net]`` size (darknet's RGB image scaled
        to 0..1: ``config(mean_values=[0, 0, 0], std_values=[255, 255, 255])`` feeds it 8-bit
        images); its outputs are the raw tensors entering each ``[yolo]``/``[region]`` layer and the
        last layer's output (docs/frontend_darknet.md).

        Args:
            model: path of the ``.cfg`` file.
            weight: path of the ``.weights`` file written by darknet for that ``.cfg``.

        Returns:
            0 on success.

        Raises:
            ModelLoadError: a file is missing, the ``.cfg`` is malformed (the message names the file,
                line and layer) or the ``.weights`` file does not hold exactly the floats the
                ``.cfg`` needs (expected and found are named).
            UnsupportedOpError: a darknet layer or activation npuc does not build.
        """
        cfg = arg_check.path("load_darknet", "model", model)
        weights = arg_check.path("load_darknet", "weight", weight)
        for path, what in ((cfg, "model"), (weights, "weight")):
            if not os.path.isfile(path):
                raise ModelLoadError(f"load_darknet: cannot open {what} {shown(path, MAX_SHOWN_PATH)}: no such file")
        job = self._new_job([(cfg, "the loaded model"), (weights, "the weights of the loaded model")])
        loaded = Model.load_darknet(cfg, weights)
        self._inputs = job
        self._model, self._runtime, self._float_model = loaded, None, None
        self._reload = None  # a fixed-shape graph (load_onnx / load_pytorch set it again)
        self._stage = Stage.LOADED
        self._model_name = Path(cfg).stem
        self._log.info("load_darknet: %d nodes, inputs %s", loaded.num_nodes, _io_summary(loaded.inputs))
        return 0

    def load_tflite(self, model: Union[str, os.PathLike], input_is_nchw: bool = False) -> int:
        """Imports a TFLite model (RKNN-Toolkit2 ``load_tflite``): a ``.tflite`` flatbuffer.

        npuc computes in NCHW: a 4-D NHWC input ``[1, H, W, C]`` becomes the NCHW graph input
        ``[1, C, H, W]`` of the same name (pass NHWC images with ``inference(data_format='nhwc')``
        or let ``'auto'`` decide, as for other frontends), weights are permuted at import, and each
        4-D output gets one final Transpose back to NHWC, so outputs compare directly with TFLite's.
        float16 weights behind DEQUANTIZE are folded to FP32. A quantized (INT8/UINT8) file keeps
        its own activation scales: ``build(do_quantization=False)`` then builds an INT8 program from
        them without a dataset (``Model.imported_ranges``). ``docs/frontend_tflite.md`` lists the
        supported ops and layout rules.

        Args:
            model: path of the ``.tflite`` file.
            input_is_nchw: True when the file's 4-D inputs are declared NCHW already: the graph
                input keeps the file's dims (RKNN's meaning; default False: NHWC).

        Returns:
            0 on success.

        Raises:
            ModelLoadError: the file is missing, truncated, not a TFLite flatbuffer, refused by the
                flatbuffers verifier, or holds a bad record (the message names the file, the
                operator index and op, or the tensor).
            UnsupportedOpError: a TFLite op (or fused activation) npuc does not build, named with
                its operator index.
        """
        path = arg_check.path("load_tflite", "model", model)
        input_is_nchw = arg_check.flag("load_tflite", "input_is_nchw", input_is_nchw)
        if not os.path.isfile(path):
            raise ModelLoadError(f"load_tflite: cannot open model {shown(path, MAX_SHOWN_PATH)}: no such file")
        job = self._new_job([(path, "the loaded model")])
        loaded = Model.load_tflite(path, input_is_nchw)
        self._inputs = job
        self._model, self._runtime, self._float_model = loaded, None, None
        self._reload = None  # a fixed-shape graph (load_onnx / load_pytorch set it again)
        self._stage = Stage.LOADED
        self._model_name = Path(path).stem
        quantized = " (quantized: %d activation ranges from the file)" % len(loaded.imported_ranges) \
            if loaded.imported_ranges else ""
        self._log.info("load_tflite: %d nodes, inputs %s%s", loaded.num_nodes, _io_summary(loaded.inputs), quantized)
        return 0

    def load_caffe(
        self,
        model: Union[str, os.PathLike],
        blobs: Optional[Union[str, os.PathLike]] = None,
        input_name: Optional[str] = None,
    ) -> int:
        """Imports a Caffe model (RKNN-Toolkit2 ``load_caffe``): a deploy prototxt and its caffemodel.

        Layers take their trained blobs from the caffemodel by layer name; BatchNorm + Scale
        become one BatchNormalization; pooling keeps Caffe's ceil-mode output sizes.
        ``docs/frontend_caffe.md`` lists the supported layers.

        Args:
            model: path of the ``.prototxt`` (the net).
            blobs: path of the ``.caffemodel`` (the trained weights); None only for nets without
                trained layers.
            input_name: the net's input blob, as RKNN takes it; when given it must name one of the
                net's inputs.

        Returns:
            0 on success.

        Raises:
            ModelLoadError: a file is missing or malformed, a layer type is unsupported, a blob is
                missing or has the wrong shape (the message names the file and the layer).
            UnsupportedOpError, ShapeError, GraphError: the model cannot be compiled as it is.
        """
        path = arg_check.path("load_caffe", "model", model)
        if not os.path.isfile(path):
            raise ModelLoadError(f"cannot open Caffe prototxt {shown(path, MAX_SHOWN_PATH)}: no such file")
        files = [(path, "the loaded model")]
        weights = ""
        if blobs is not None:
            weights = arg_check.path("load_caffe", "blobs", blobs)
            if not os.path.isfile(weights):
                raise ModelLoadError(f"cannot open caffemodel {shown(weights, MAX_SHOWN_PATH)}: no such file")
            files.append((weights, "the weights of the loaded model"))
        if input_name is not None and not isinstance(input_name, str):
            raise ConfigError(f"load_caffe(input_name) must be a string, got {type(input_name).__name__}")
        job = self._new_job(files)
        loaded = Model.load_caffe(path, weights, input_name or "", custom_ops=self._custom_set)
        self._inputs = job
        self._model, self._runtime, self._float_model = loaded, None, None
        self._reload = None  # a fixed-shape graph (load_onnx / load_pytorch set it again)
        self._stage = Stage.LOADED
        self._model_name = Path(os.fspath(model)).stem
        self._log.info("load_caffe: %d nodes, inputs %s", loaded.num_nodes, _io_summary(loaded.inputs))
        return 0

    def build(
        self,
        do_quantization: bool = True,
        dataset: Optional[Any] = None,
        rknn_batch_size: Optional[int] = None,
        auto_hybrid: bool = False,
        verify: bool = False,
        dump_dir: Optional[str] = None,
    ) -> int:
        """Optimizes the loaded graph for the NPU and, optionally, quantizes it (RKNN ``build``).

        The graph optimizer runs first, at ``config(optimization_level=...)`` (default 3; 0 runs
        nothing, 1-2 only passes that cannot change numerics) minus ``config(disable_passes=[...])``.
        With ``config(target_platform=...)`` set it also runs the target stage: rewrites that keep
        ops on that SoC's NPU (``legalize_conv_stride``: a Conv stride or kernel beyond the NPU's
        limits becomes SpaceToDepth + a Conv within them). Its report (passes that fired, node counts, why fusions did not apply) is printed and kept
        in :attr:`optimization_report`.

        Args:
            do_quantization: quantize to INT8 from ``dataset`` (False keeps the float model).
            dataset: RKNN ``dataset.txt`` path (images get mean/std, as ``inference`` inputs do), or an
                iterable of numpy samples taken as the model's input as they are (no mean/std; a
                uint8 array for an input with mean/std is refused as a raw image).
            rknn_batch_size: the batch the built model takes (1..32; None: the batch of
                ``input_size_list``, else 1): its inputs and outputs get dim 0 = N and
                ``inference`` runs N images at once. Quantization is planned at batch 1, so each
                item's output equals the single-image output bit for bit (INT8 and FP16). Needs
                a model loaded with ``load_onnx`` / ``load_pytorch`` (re-imported at batch N).
            auto_hybrid: move layers whose isolated cosine is below
                ``config(auto_hybrid_cos_thresh)`` to FP16 (quantization only).
            verify: run the original and the optimized graph on the same random inputs, print the
                max absolute and relative error per output, and fail if beyond tolerance.
            dump_dir: write ``check<N>_<stage>.onnx`` after each optimizer stage into this folder.

        With ``config(dynamic_input=[set 0, set 1, ...])`` (each set one full shape per input, RKNN's
        form) the model is re-imported, optimized and calibrated at set 0 (dataset images are resized
        to it; in-memory samples must have its shapes), then every other set is made with set 0's
        quantization plan (``_specialized``: the same integer weights), so each set's output equals
        a build at that shape with that plan, bit for bit. One blob holds every set, the weights
        stored once (its SHPV section); ``inference`` runs the set the arrays' shapes match; a line
        reports what the sets share (packed weights, pipelines). Needs ``load_onnx`` /
        ``load_pytorch`` and no ``rknn_batch_size`` above 1 (give the batch in each set's dim 0).

        Returns:
            0 on success.

        Raises:
            NpucError: no model loaded; VerificationError when ``verify`` finds a mismatch.
            ConfigError: an invalid option (unknown pass name, bad optimization level, ...), or a
                dynamic_input set with the wrong number of shapes or a wrong rank (named by set and input).
            NotSupportedError: dynamic_input with a fixed-shape loader, with rknn_batch_size above 1,
                or a set whose optimized graph set 0's quantization plan does not cover (named).
        """
        require("build", self._stage)
        do_quantization = arg_check.flag("build", "do_quantization", do_quantization)
        auto_hybrid = arg_check.flag("build", "auto_hybrid", auto_hybrid)
        verify = arg_check.flag("build", "verify", verify)
        dump_dir = arg_check.optional_path("build", "dump_dir", dump_dir)
        _check_dataset("build", dataset)
        loaded = self._float_model or self._model
        # config(dynamic_input): set 0 is built as usual (re-imported at its shapes), the others
        # from it with its quantization plan (npuc.dynamic_input).
        sets = dynamic_input.resolve("build", self._config.get("dynamic_input"), loaded.inputs, self._reload,
                                     rknn_batch_size)
        batch = 1 if sets else batching.resolve("build", rknn_batch_size, loaded.inputs, self._input_batch())
        batching.require_reloadable("build", self._reload, batch)
        self._preprocessor.check_model(loaded.inputs)
        level = self._config.get("optimization_level")
        level = 3 if level is None else level
        if level not in (0, 1, 2, 3):
            raise ConfigError(f"optimization_level={shown(level)}: must be 0, 1, 2 or 3")
        disabled = list(self._config.get("disable_passes") or [])
        if do_quantization:
            self._add_inputs(dataset_files(dataset))
            _refuse_raw_images_in_memory("build", dataset, self._preprocessor,
                                         (self._float_model or self._model).inputs)
        # A batch build is planned on the model at batch 1 (calibration statistics per image), then
        # re-made at batch N with that plan (npuc.batch).
        source = self._reload(batching.shapes_at(loaded.inputs, 1)) if batch > 1 else loaded
        if sets:
            source = self._reload(sets[0])
            self._emit(f"dynamic_input: {len(sets)} shape set(s); optimizing and "
                       + ("calibrating" if do_quantization else "building") + f" at set 0 {dynamic_input.describe(sets[0])}"
                       + (" (dataset images are resized to it)" if do_quantization else ""))
        # A quantized TFLite file carries its scales: building it "without quantization" keeps them
        # (RKNN's rule for pre-quantized models) and makes an INT8 program with no calibration.
        from_file = not do_quantization and bool(source.imported_ranges)
        # A QDQ model carries its scales too (either build keeps them; docs/qdq_import.md).
        from_qdq = qdq_import.is_imported_qdq(source)
        check_op_target_names(self._config.get("op_target") or {}, [n["name"] for n in source.nodes],
                              _npuc.supported_ops(), list(self._custom_ops))
        with staged_folder(dump_dir, "an optimizer dump", self._inputs) as staging:
            self._optimize_args = dict(
                level=level, disabled=disabled, soc=self._config.get("target_platform") or "",
                dtype="int8" if do_quantization or from_file or from_qdq else "fp16",
                op_target=dict(self._config.get("op_target") or {}))
            optimized, report = _optimize(source, self._optimize_args, staging)
        self.optimization_report = report
        self._emit(report["text"])
        if verify:
            verify_optimization(source, optimized, self._emit)
        self._float_model = loaded
        self._model, self._runtime = optimized, None
        self._stage = Stage.BUILT
        self._report_partition()
        self._built_float = not do_quantization and not from_file and not from_qdq
        self.calibration_timings = None
        if from_qdq:
            self._quantize_from_qdq(source, dataset if do_quantization else None)
        elif do_quantization:
            self._quantize(dataset, auto_hybrid)
        elif from_file:
            self._quantize_from_file(source)
        else:
            self._use_fp16()
        if batch > 1:
            self._rebatch(batch)
        self.built_batch = batch
        self._shape_sets = None
        if len(sets) > 1:
            self._build_shape_sets(sets)
        return 0

    def _build_shape_sets(self, sets: List[List[Shape]]) -> None:
        """Sets 1.. of config(dynamic_input) from the set-0 build just made, and the reuse report."""
        others = dynamic_input.specialize_all(sets, self._specialized)
        self._shape_sets = (self._model, [(sets[0], self._model, self._simulator())]
                            + [(shapes, model, sim) for shapes, (model, sim) in zip(sets[1:], others)])
        if self._config.get("target_platform"):  # compiled now (export_blob reuses it): what the sets share
            self._emit(dynamic_input.reuse_text(self._compiled("build").shape_variant_reuse()))
        else:
            self._emit(f"dynamic_input: {len(sets)} shape sets built: "
                       + "; ".join(dynamic_input.describe(s) for s in sets))

    def _current_shape_sets(self) -> List[Tuple[List[Shape], Any, Any]]:
        """[(shapes, model, simulator)] per config(dynamic_input) set of the current model ([]: one shape)."""
        held = self._shape_sets
        return held[1] if held is not None and held[0] is self._model else []

    def _input_batch(self) -> int:
        """The batch input_size_list loaded the model at (1 for a fixed-shape loader)."""
        return self._loaded_batch if self._reload is not None else 1

    def _rebatch(self, batch: int) -> None:
        """The batch-1 build just made, re-made at ``batch`` with its quantization plan."""
        single = self._model
        try:
            batched, simulator = self._specialized(batching.shapes_at(single.inputs, batch))
        except ConfigError as e:  # the plan names a value the batch-N graph lacks, or the reverse
            raise NotSupportedError(
                f"build: at batch {batch} the optimizer shapes this model's graph differently from batch 1, so "
                f"the batch-1 quantization plan does not fit it ({e}); build it with do_quantization=False "
                f"(FP16), or at batch 1") from e
        batching.check_batched(single, batched, batch)
        self._model, self._quantized = batched, (batched, simulator)
        self._emit(f"batch: built at batch {batch} with the batch-1 quantization plan (inputs "
                   + ", ".join(f"{i['name']} {list(i['shape'])}" for i in batched.inputs) + ")")

    def _quantize_from_file(self, source: Any) -> None:
        """INT8 from the activation ranges a quantized TFLite file declares (no calibration run).

        Values the optimizer created or renamed take the nearest upstream range
        (``Model.complete_ranges``); weights get npuc's own per-channel scales from the
        dequantized FP32 weights (``config(quantized_method=...)``).
        """
        from npuc._npuc import quantize_from_ranges

        ranges = {name: (r["min"], r["max"]) for name, r in source.imported_ranges.items()}
        ranges, filled = self._model.complete_ranges(ranges)
        method = self._config.get("quantized_method") or "channel"
        quantized = quantize_from_ranges(self._model, ranges, method, [])
        self._emit(f"quantization: INT8 from the model file's own scales ({len(source.imported_ranges)} activation "
                   f"ranges; {len(filled)} values the optimizer created take their upstream range), no calibration")
        self._quantized = (self._model, quantized)

    def _quantize_from_qdq(self, source: Any, dataset: Optional[Any]) -> None:
        """INT8 from the scales a QDQ model's Q/DQ nodes gave; a dataset calibrates only the
        activations the file (after the optimizer) leaves without parameters."""
        from npuc.quantize import calibrate, settings_from_config

        algorithm, method = settings_from_config(self._config)
        ranges = None
        if dataset is not None:
            calibrator, _ = calibrate(self._model, dataset, self._preprocessor.apply,
                                      bool(self._config.get("quant_img_RGB2BGR", False)))
            ranges = calibrator.ranges(algorithm)
        quantized, report = qdq_import.build(self._model, source, method, self._qdq_strict, ranges,
                                             self._config.get("hybrid_layers"), self._log)
        self.qdq_report = report
        self._emit(f"quantization: INT8 from the QDQ model's own scales ({report['kept']} given parameters kept, "
                   f"{report['dropped_missing'] + report['dropped_changed']} lost to the optimizer, "
                   f"{report['requantized']} weights requantized), "
                   + ("a dataset calibrated the rest" if ranges is not None else "no calibration"))
        self._quantized = (self._model, quantized)

    def _report_partition(self) -> None:
        """Prints where each op runs on the target, with the reason for every CPU fallback."""
        from npuc._npuc import partition

        soc = self._config.get("target_platform")
        if not soc or self._model is None:
            self.partition_report = None
            return
        self.partition_report = partition(self._model, soc, dict(self._config.get("op_target") or {}))
        self._emit(self.partition_report["text"])

    def _use_fp16(self) -> None:
        """A float build runs as the NPU would: weights and every op output rounded to IEEE half."""
        from npuc.quantize import fp16

        self._quantized = (self._model, fp16(self._model))

    def _quantize(self, dataset: Optional[Any], auto_hybrid: bool) -> None:
        """INT8 quantization of the optimized graph; inference() then runs the INT8 simulator."""
        from npuc.accuracy import weight_outlier_report
        from npuc.hybrid import build_auto_hybrid
        from npuc.quantize import build_for_toolkit

        self.auto_hybrid_report = None
        self.calibration_timings = None
        if auto_hybrid:  # layers whose isolated cosine is below auto_hybrid_cos_thresh -> FP16
            quantized, self.auto_hybrid_report = build_auto_hybrid(
                self._model, self._config, dataset, self._preprocessor.apply, self._log
            )
            self._emit(self.auto_hybrid_report.text)
        else:
            timings: Dict[str, float] = {}
            quantized = build_for_toolkit(self._model, self._config, True, dataset, self._preprocessor.apply, self._log,
                                          timings)
            self.calibration_timings = timings
        outliers = weight_outlier_report(quantized)
        if outliers:
            self._emit(outliers)
        # Tied to the model it was built from, so a later load/build/release makes it stale.
        self._quantized = (self._model, quantized)

    def hybrid_quantization_step1(
        self,
        dataset: Optional[Any] = None,
        rknn_batch_size: Optional[int] = None,
        proposal: bool = False,
        proposal_dataset_size: int = 1,
        output_prefix: Optional[Union[str, os.PathLike]] = None,
    ) -> int:
        """RKNN's hybrid quantization, step 1: optimize, calibrate, write the editable config.

        Writes ``<prefix>.model`` (the optimized graph), ``<prefix>.data`` (calibrated ranges) and
        ``<prefix>.quantization.cfg`` (YAML; put ``layer: float16`` under
        ``custom_quantize_layers`` to keep a layer in FP16), then call
        :meth:`hybrid_quantization_step2` with the three paths. See :mod:`npuc.hybrid`.

        Args:
            dataset: calibration ``dataset.txt`` path or iterable of samples.
            rknn_batch_size: RKNN compatibility; must be None or 1 (the edited config is for
                a batch-1 graph; build at batch N after step 2 is not supported yet).
            proposal: pre-fill ``custom_quantize_layers`` with the layers whose single cosine is
                below ``config(auto_hybrid_cos_thresh)`` (default 0.98).
            proposal_dataset_size: calibration samples the proposal is measured on.
            output_prefix: npuc extension: where the files go (default: the model's file name
                in the current directory, as RKNN does).

        Returns:
            0 on success.
        """
        from npuc import hybrid

        require("hybrid_quantization_step1", self._stage)
        _check_dataset("hybrid_quantization_step1", dataset)
        arg_check.one_of("hybrid_quantization_step1", "rknn_batch_size", rknn_batch_size, (None, 1))
        if self._config.get("dynamic_input"):
            raise NotSupportedError("hybrid_quantization_step1: config(dynamic_input) is not supported with hybrid "
                                    "quantization (its config is for one graph); drop dynamic_input")
        if self._input_batch() > 1:
            raise NotSupportedError("hybrid_quantization_step1: the model was loaded at batch "
                                    f"{self._input_batch()}; hybrid "
                                    "quantization works on a batch-1 graph (load it with input_size_list at batch 1)")
        proposal = arg_check.flag("hybrid_quantization_step1", "proposal", proposal)
        arg_check.integer("hybrid_quantization_step1", "proposal_dataset_size", proposal_dataset_size, 1)
        output_prefix = arg_check.optional_path("hybrid_quantization_step1", "output_prefix", output_prefix)
        self._add_inputs(dataset_files(dataset))
        prefix = Path(output_prefix) if output_prefix is not None else Path(self._model_name)
        for kind, path in hybrid.step1_paths(prefix).items():  # refused before any work
            refuse_output(path, hybrid.STEP1_FILES[kind], self._inputs)
        self.build(do_quantization=False, rknn_batch_size=rknn_batch_size)  # the optimized graph
        paths = hybrid.step1(self._model, self._config, dataset, self._preprocessor.apply, prefix,
                             proposal, proposal_dataset_size, self._inputs)
        self._emit("hybrid_quantization_step1 wrote " + ", ".join(os.fspath(p) for p in paths.values()))
        return 0

    def hybrid_quantization_step2(
        self,
        model_input: Union[str, os.PathLike],
        data_input: Union[str, os.PathLike],
        model_quantization_cfg: Union[str, os.PathLike],
    ) -> int:
        """RKNN's hybrid quantization, step 2: rebuild from step 1's files and the edited config.

        Afterwards the toolkit holds the quantized model, as after ``build()``: ``inference``,
        ``export_blob``, ``eval_perf`` and ``accuracy_analysis`` use it.

        Returns:
            0 on success.

        Raises:
            ConfigError: a wrong cfg entry (unknown layer or activation, precision other than
                float16, bad min/max), named by its key. ModelLoadError: a missing model file.
        """
        from npuc import hybrid

        call = "hybrid_quantization_step2"
        model_input = arg_check.path(call, "model_input", model_input)
        data_input = arg_check.path(call, "data_input", data_input)
        model_quantization_cfg = arg_check.path(call, "model_quantization_cfg", model_quantization_cfg)
        job = self._new_job([(model_input, "the hybrid model_input"), (data_input, "the hybrid data_input"),
                             (model_quantization_cfg, "the hybrid model_quantization_cfg")])
        # What step 1 recorded (SoC, mean/std, RGB2BGR) applies where config() did not set it: RKNN's
        # step2 script runs in a fresh object and exports without calling config().
        for key, value in hybrid.recorded_config(data_input).items():
            if self._config.get(key) in (None, False):
                self._config[key] = value
        self._preprocessor = InputPreprocessor(self._config.get("mean_values"), self._config.get("std_values"))
        model, quantized = hybrid.step2(model_input, data_input, model_quantization_cfg, self._config,
                                        self._custom_set)
        self._inputs = job
        self._model, self._runtime, self._float_model = model, None, model
        self._reload = None  # a fixed-shape graph (load_onnx / load_pytorch set it again)
        self._stage = Stage.BUILT
        self._built_float = False
        self._report_partition()
        self._quantized = (model, quantized)
        fp16_layers = sorted(n for n, p in quantized.node_precisions.items() if p == "fp16")
        self._emit(f"hybrid_quantization_step2: {len(fp16_layers)} layer(s) in FP16: {', '.join(fp16_layers) or '-'}")
        return 0

    def accuracy_analysis(
        self,
        inputs: Sequence[Any],
        output_dir: Optional[Union[str, os.PathLike]] = "./snapshot",
        target: Optional[str] = None,
        device_id: Optional[str] = None,
    ) -> int:
        """Per-layer error of the built model vs FP32 (RKNN ``accuracy_analysis``).

        Prints and writes to ``output_dir/error_analysis.txt`` a table with, per activation, the
        cosine, Euclidean distance and SQNR of the simulator against FP32, "entire" (end to end)
        and "single" (the layer alone on its quantized FP32 inputs); dumps every tensor as .npy
        into ``output_dir/golden``, ``/simulator`` and ``/single``. The result is also kept in
        :attr:`accuracy_report`. How to read it: docs/quantization.md section 10.

        Args:
            inputs: one entry per model input: a ``.npy`` / image path (preprocessed like a
                calibration sample: mean/std, RGB2BGR) or an already preprocessed array.
            output_dir: where the dumps and the table go (created if needed); None prints the
                table and writes nothing (RKNN's hybrid example passes None).
            target, device_id: RKNN compatibility; only the host simulator (None) exists.

        Returns:
            0 on success.
        """
        from npuc import accuracy

        require("accuracy_analysis", self._stage)
        if target is not None or device_id is not None:
            raise ConfigError(f"accuracy_analysis(target={shown(target)}, device_id={shown(device_id)}): only the host "
                              f"simulator (target=None) is supported")
        output_dir = arg_check.optional_path("accuracy_analysis", "output_dir", output_dir)
        simulator = self._simulator()
        if simulator is None:
            raise NpucError("accuracy_analysis needs a built model: call build() (or hybrid_quantization_step2) first")
        self._add_inputs(accuracy.input_files(inputs))
        if output_dir is not None:
            accuracy.check_output_dir(output_dir, self._inputs)
        arrays = accuracy.load_inputs(inputs, simulator.inputs, self._preprocessor.apply,
                                      bool(self._config.get("quant_img_RGB2BGR")))
        self.accuracy_report = accuracy.analyze(simulator, arrays, output_dir, self._inputs)
        self._emit(self.accuracy_report.text)
        return 0

    def _specialized(self, shapes: List[Shape]) -> Tuple[Any, Any]:
        """The current build made again for other input shapes (issue #18: each
        ``config(dynamic_input)`` set, ``build(rknn_batch_size=N)``): the loaded model re-imported
        at ``shapes`` (one full shape per input), optimized as build() did, and given build()'s
        quantization plan (the same scales, so the same integer weights and, per sample, the same
        integer outputs), or the FP16 simulator for a float build.

        Returns (optimized model, simulator). Raises NotSupportedError for a model whose loader
        fixed its shapes (TFLite, Darknet, Caffe, a loaded blob), ShapeError for shapes the
        model's graph cannot take, ConfigError (from ``quantized_from_plan``) when the
        re-optimized graph differs from the one the plan was made for (a value or node the plan
        does not cover).
        """
        from npuc._npuc import quantized_from_plan

        require("build", self._stage)
        if self._reload is None or self._optimize_args is None:
            raise NotSupportedError(
                "other input shapes need a model loaded with load_onnx or load_pytorch (re-imported at "
                "each shape); this model's loader fixed its shapes")
        optimized, _ = _optimize(self._reload(shapes), self._optimize_args, "")  # "": no dump
        if self._built_float:
            from npuc.quantize import fp16

            return optimized, fp16(optimized)
        built = self._simulator()
        if built is None or built.mode != "int8":
            raise NpucError("_specialized: build() has not quantized this model")
        return optimized, quantized_from_plan(optimized, built.plan_bytes)

    def _simulator(self) -> Optional[Any]:
        """The INT8 simulator of the current model when build() quantized it, else None."""
        built = getattr(self, "_quantized", None)
        return built[1] if built is not None and built[0] is self._model else None

    def export_blob(self, export_path: Union[str, os.PathLike]) -> int:
        """Writes the built model as a ``.npub`` blob (RKNN ``export_rknn``).

        The blob is versioned and checksummed, records the target SoC and the build options, and
        is byte-identical for identical inputs and options. Load it back with :meth:`load_blob`.
        The file is written to a temporary next to it and renamed into place, so a failure never
        leaves half a blob nor destroys an earlier file.

        Returns:
            0 on success.

        Raises:
            NpucError: nothing built yet. ConfigError: no target_platform configured.
            OutputError: ``export_path`` is a file this toolkit read (the loaded model, the
                dataset list or a listed sample, ...) or a directory.
        """
        refuse_output(export_path, "the blob", self._inputs)  # before compiling
        compiled = self._compiled("export_blob")
        with atomic_output(export_path, "the blob", self._inputs) as tmp:
            compiled.write(tmp)
        return 0

    #: RKNN-Toolkit2 spelling.
    export_rknn = export_blob
    export_npub = export_blob

    def load_blob(self, path: Union[str, os.PathLike]) -> int:
        """Loads a ``.npub`` blob written by :meth:`export_blob` (RKNN ``load_rknn``).

        The file is verified (structure, checksum, format version) before use; with
        ``config(target_platform=...)`` set, a blob for another SoC is refused. The blob's
        recorded ``mean_values`` / ``std_values`` apply to later ``inference`` calls unless
        ``config`` set its own, so a loaded blob takes the raw inputs its build was calibrated on.

        Returns:
            0 on success.

        Raises:
            BlobError: corrupt, truncated, newer-format or foreign-SoC blob (named).
        """
        from npuc._npuc import load_compiled

        path = arg_check.path("load_blob", "path", path)
        expected_soc = self._config.get("target_platform") or None
        job = self._new_job([(path, "the loaded blob")])
        compiled = load_compiled(path, expected_soc, self._custom_set)  # the file is read and checked once
        model, meta, options = compiled.model, compiled.meta, compiled.options
        unknown = model.unknown_ops
        if unknown:
            ops = sorted({n["op_type"] for n in unknown})
            raise UnsupportedOpError(
                f"load_blob: {shown(path, MAX_SHOWN_PATH)} uses custom op(s) {', '.join(ops)} (e.g. node "
                f"'{unknown[0]['name']}'); register them with reg_custom_op() before loading the blob")
        self._inputs = job
        self._model, self._runtime, self._float_model = model, None, model
        self._reload = None  # a fixed-shape graph (load_onnx / load_pytorch set it again)
        self._stage = Stage.BLOB_LOADED
        # The simulator runs the blob's compiled program over its planned activation arena when the
        # blob carries them (TASK + MPLN sections; `.runtime == "program"`): INT8 kernels for a
        # quantized build, the NPU's FP16 for a float one.
        self._quantized = (model, compiled.simulator())
        self._compiled_model = (model, compiled, True)
        self._shape_sets = None
        if compiled.shape_variants:  # config(dynamic_input): each set's program from SHPV
            self._shape_sets = (model, [([list(i["shape"]) for i in c.model.inputs], c.model, sim) for c, sim in
                                        [(compiled, self._quantized[1])]
                                        + [(v, v.simulator()) for v in compiled.shape_variants]])
        if not self._config.get("target_platform"):
            self._config["target_platform"] = compiled.soc
        # The partition the blob was compiled for, unless config() set its own.
        if options.op_target and not self._config.get("op_target"):
            self._config["op_target"] = dict(options.op_target)
        if options.single_core_mode and self._config.get("single_core_mode") is None:
            self._config["single_core_mode"] = True
        # The normalization the blob was built with, unless config() set one (RKNN's models
        # carry theirs, so inference() takes raw images).
        if self._config.get("mean_values") is None and self._config.get("std_values") is None:
            mean, std = options.mean_values or None, options.std_values or None
            if mean is not None or std is not None:
                self._preprocessor = InputPreprocessor(mean, std)
                self._config.update(mean_values=mean, std_values=std)
        self._built_float = not compiled.quantized
        self.blob_meta = meta
        self._log.info("load_blob: %s for %s, format %s", path, meta["soc"], meta["format_version"])
        return 0

    load_rknn = load_blob

    def _compile_options(self) -> "CompileOptions":
        """The typed options of the current build, as the blob records them.

        Effective values (defaults written out, aliases canonical), so two builds with the same
        effective settings (one spelling a default, one leaving it out) give byte-identical blobs.
        """
        from npuc._npuc import CompileOptions

        o = CompileOptions()
        level = self._config.get("optimization_level")
        o.optimization_level = 3 if level is None else int(level)
        o.quantized = not self._built_float
        o.single_core_mode = bool(self._config.get("single_core_mode"))
        if not self._built_float:
            o.quantized_dtype = self._config.get("quantized_dtype") or "w8a8"
            o.quantized_algorithm = self._config.get("quantized_algorithm") or "normal"
            o.quantized_method = self._config.get("quantized_method") or "channel"
        o.custom_string = self._config.get("custom_string") or ""
        o.disable_passes = list(self._config.get("disable_passes") or [])
        o.hybrid_layers = list(self._config.get("hybrid_layers") or [])
        o.op_target = dict(self._config.get("op_target") or {})
        for key in ("mean_values", "std_values"):  # as floats: [[0, 0, 0]] and [0.0, 0.0, 0.0] are one setting
            if self._config.get(key):
                setattr(o, key, _float_lists(self._config[key]))
        return o

    def _compiled(self, caller: str) -> "CompiledModel":
        """The compiled model of the current build: placement, program and memory plan, decided once.

        Compiled on first use after build() (or taken from load_blob) and kept while the model and
        the options stay the same; export_blob writes it, eval_perf and eval_memory read it.
        """
        from npuc._npuc import compile_model, soc_profile

        require(caller, self._stage)
        soc = self._config.get("target_platform")
        if not soc:
            raise ConfigError(f"{caller} needs config(target_platform=...), e.g. 'rk3588'")
        cached = getattr(self, "_compiled_model", None)
        cached = cached if cached is not None and cached[0] is self._model else None
        if cached is not None and cached[2]:  # a loaded blob: its options, with config's placement
            options = cached[1].options
            options.op_target = dict(self._config.get("op_target") or {})
            options.single_core_mode = bool(self._config.get("single_core_mode"))
        else:
            options = self._compile_options()
        if cached is not None and cached[1].options == options and cached[1].soc == soc_profile(soc)["name"]:
            return cached[1]
        compiled = compile_model(self._compile_source(self._model, self._simulator()), soc, options)
        sets = self._current_shape_sets()
        if len(sets) > 1:  # config(dynamic_input): every other set compiled alike, kept as shape_variants
            compiled = compiled.with_shape_variants(
                [compile_model(self._compile_source(model, sim), soc, options) for _, model, sim in sets[1:]])
        self._compiled_model = (self._model, compiled, False)
        return compiled

    def _compile_source(self, model: Any, simulator: Optional[Any]) -> Any:
        """What compile_model takes for one build of `model`: its INT8 simulator (which carries the
        quantization plan) for a quantized build, else the model itself (a float build runs in FP16)."""
        quantized = not self._built_float and simulator is not None and simulator.mode == "int8"
        return simulator if quantized else model

    def init_runtime(
        self, target: Optional[str] = None, max_run_bytes: Optional[Union[int, str]] = None, **kwargs: Any
    ) -> int:
        """Prepares inference (RKNN-Toolkit2 ``init_runtime``).

        Only the host runtime exists (``target=None``); running on a board is not supported.

        Args:
            target: ``None`` (the host).
            max_run_bytes: npuc's own: the most memory one :meth:`inference` may use (outputs and
                activations, estimated before anything is allocated): bytes as an int, or a string
                such as ``'512M'`` or ``'8G'``. ``None`` (the default) reads the environment variable
                ``NPUC_MAX_RUN_BYTES`` at each inference, else sets no cap. A run over the cap, or
                over the memory the machine has available, raises ResourceError naming the largest
                tensors.
            core_mask: (keyword) RKNN's NPU core mask (``Toolkit.NPU_CORE_AUTO`` = 0, ``NPU_CORE_0``
                = 1, ``NPU_CORE_1`` = 2, ``NPU_CORE_2`` = 4, ``NPU_CORE_0_1`` = 3, ``NPU_CORE_0_1_2`` = 7,
                ``NPU_CORE_ALL`` = 0xffff, or those names as strings): the cores :meth:`eval_perf`
                schedules the program on (AUTO: one core, as RKNN's runtime picks one idle core).
                The simulator's outputs do not depend on it.
            Other RKNN board options (``perf_debug``, ``eval_mem``, ...) are accepted and named in
            a warning when they would change what happens on a board.

        Returns:
            0 on success.

        Raises:
            ConfigError: another target, a max_run_bytes that is not a positive byte count, a
                core_mask that is not RKNN's, names a core the SoC lacks, or names more than one
                core for a ``single_core_mode`` build.
        """
        require("init_runtime", self._stage)
        if target is not None:
            raise ConfigError(f"init_runtime(target={shown(target)}): only the host runtime (target=None) is supported")
        mask = kwargs.pop("core_mask", core_mask.NPU_CORE_AUTO)
        self._check_board_options(kwargs)
        # eval_perf's cores from now on; the simulator's outputs do not depend on them. Checked
        # against the SoC now when config names it, else when eval_perf needs the SoC.
        self._runtime_mask = core_mask.core_mask_value(mask, "init_runtime: core_mask")
        if self._config.get("target_platform"):
            self._cores_for_mask(self._runtime_mask)
        elif self._runtime_mask != core_mask.NPU_CORE_AUTO:
            self._log.warning("init_runtime(core_mask=%s): no config(target_platform) yet, so the mask is checked "
                              "against the SoC's cores when eval_perf runs; the simulator's outputs do not depend on it",
                              core_mask.core_mask_name(self._runtime_mask))
        # Validated now (the same rule the runtimes apply); None stays None so the environment
        # variable is read when the run happens.
        self._max_run_bytes = None if max_run_bytes is None else _npuc.max_run_bytes(max_run_bytes)
        # After build() or load_blob inference runs on the NPU simulator, prepared there; the FP32
        # host runtime is only built for a model that has no simulator (before build()).
        if self._simulator() is None:
            self._ensure_runtime()
        return 0

    def inference(
        self,
        inputs: Union[ArrayLike, Sequence[ArrayLike]],
        data_format: Optional[Union[str, Sequence[str]]] = None,
        inputs_pass_through: Optional[Sequence[int]] = None,
    ) -> List[np.ndarray]:
        """Runs the model (RKNN-Toolkit2 ``inference``).

        Before ``build()`` (or after ``load_onnx`` alone) it runs on the FP32 host runtime; after
        ``build()`` or ``load_blob`` it runs on the bit-exact NPU simulator: INT8 for a quantized
        build, FP16 (weights and every op output rounded to half) for ``do_quantization=False``.

        Array types (one rule before and after ``build()``, see :mod:`npuc.input_dtype`): a
        float input takes float16/32/64 and 8/16/32-bit integer arrays (uint8 images), converted
        by rounding, and int64/uint64 arrays (what a Python list of ints becomes) only when every
        value is exactly representable in the input's type; an integer input (e.g. int64 token
        ids) takes integer arrays whose values fit its range; a bool input takes bool arrays.
        bool arrays for numeric inputs, float arrays for integer inputs, and complex, object,
        str/bytes, datetime and structured arrays are refused with an InputError.

        Args:
            inputs: one array per model input, in order (a single array for a one-input model).
            data_format: the layout of a 4-D input's array: ``'auto'`` (the default: the
                array's shape decides: the model's NCHW shape as is, an NHWC image such as
                cv2/PIL give transposed, either without the batch dim given one; where both
                layouts fit, H = W = C, NCHW), ``'nchw'`` (as is) or ``'nhwc'`` (transposed; a
                3-D HWC array gets a batch dim); one string for all inputs or one per input.
            inputs_pass_through: per input, 1 to feed the array exactly as given (no layout
                change, no mean/std), 0 (the default) to preprocess it.

        A ``config(dynamic_input)`` build or blob runs the first shape set whose shapes the arrays
        have under the layout rules above (checked against every set); none: InputError listing them.

        Returns:
            The model's outputs as numpy arrays, in order.

        Raises:
            InputError: wrong number of inputs, or an input of the wrong shape or an array type
                the rule above refuses (named, with what the input takes).
            ResourceError: the run's outputs and activations exceed the cap of
                ``init_runtime(max_run_bytes=...)`` / ``NPUC_MAX_RUN_BYTES`` or the memory the
                machine has available (checked before anything is allocated).
            NpucError: no model loaded.
        """
        require("inference", self._stage)
        runtime = self._simulator() or self._ensure_runtime()  # the NPU simulator once built
        expected = runtime.inputs
        arrays = _as_input_list(inputs, len(expected))
        formats = _per_input("data_format", data_format, len(arrays), "auto", DATA_FORMATS)
        passes = _per_input("inputs_pass_through", inputs_pass_through, len(arrays), 0, (0, 1))
        sets = self._current_shape_sets()
        if sets:  # config(dynamic_input): the first set whose shapes the arrays have (after layout handling)
            k = dynamic_input.pick([(shapes, sim) for shapes, _, sim in sets],
                                   lambda rt: all(_layout_fits(x, f, info, p) for x, f, info, p in
                                                  zip(arrays, formats, rt.inputs, passes)),
                                   [list(np.shape(x)) for x in arrays])
            runtime = sets[k][2]
            feeds = self._feeds(arrays, runtime.inputs, formats, passes)
        else:
            feeds = self._feeds(arrays, expected, formats, passes)
        return runtime.run(feeds, max_run_bytes=self._max_run_bytes)

    def _feeds(self, arrays: List[Any], expected: Sequence[Dict[str, Any]], formats: List[str],
               passes: List[int]) -> List[Any]:
        """The arrays as the model's inputs `expected` take them (layout, mean/std, dtype)."""
        feeds = []
        for i, (x, info) in enumerate(zip(arrays, expected)):
            where = f"inference input {i}"
            if passes[i]:
                feeds.append(coerce_input(x, info, where))
                continue
            x = _to_nchw(x, formats[i], info, where)
            feeds.append(coerce_input(x, info, where, partial(self._preprocessor.apply, i, info=info)))
        return feeds

    def eval_perf(
        self,
        is_print: bool = True,
        fix_freq: bool = True,
        plot_path: Optional[Union[str, os.PathLike]] = None,
        tuning_cache: Optional[Union[str, os.PathLike]] = None,
    ) -> "PerfReport":
        """Simulated per-layer NPU performance of the model on ``config(target_platform)``.

        What RKNN-Toolkit2 can only measure on a board: per fused layer the DDR / NPU / total
        cycles, time, MAC utilization, bytes moved and the bottleneck, then a summary (time, FPS,
        DDR traffic, NPU/CPU split, hand-over cost) and an op-type ranking. After ``build()`` or
        ``load_blob`` the rows are the compiled program's tasks, each in the dtype it runs in
        (INT8, FP16 for hybrid / float-kept layers and ``do_quantization=False`` builds, FP32 on
        the CPU), with ``config(op_target, single_core_mode)``; before ``build()`` it costs what a
        default INT8 build would compile to.

        Args:
            is_print: print the table (RKNN's default).
            fix_freq: accepted for RKNN compatibility (the model is always at the profile clock).
            plot_path: also write a PNG (per-layer DDR vs NPU cycles and a roofline); on more than
                one core also the per-core timeline beside it (``perf.png`` -> ``perf.timeline.png``).
            tuning_cache: file of tiling decisions reused across runs.

        Returns:
            A :class:`npuc.perf.PerfReport` (``.rows``, ``.summary``, ``to_csv()``, ``to_json()``,
            ``plot()``). For a ``config(dynamic_input)`` build it is set 0's, and
            ``.shape_sets`` lists ``(input shapes, PerfReport)`` for every set (printed each under a
            heading); otherwise ``.shape_sets`` is empty.

        Raises:
            NpucError: no model loaded. ConfigError: no target_platform configured.
            OutputError: ``plot_path`` is not an image format matplotlib writes (named with the
                ones it does), a file this toolkit read, or a directory; checked before any work.
        """
        from npuc.perf import PerfReport, check_plot_path, eval_perf, timeline_path

        require("eval_perf", self._stage)
        is_print = arg_check.flag("eval_perf", "is_print", is_print)
        arg_check.flag("eval_perf", "fix_freq", fix_freq)
        tuning_cache = arg_check.optional_path("eval_perf", "tuning_cache", tuning_cache)
        soc = self._config.get("target_platform")
        if not soc:
            raise ConfigError("eval_perf needs config(target_platform=...), e.g. 'rk3588'")
        if plot_path is not None:
            check_plot_path(plot_path, self._inputs)
        cache = tuning_cache or ""
        # After init_runtime: its core_mask's cores; before: all the SoC's (one with single_core_mode).
        mask = self._runtime_mask
        runtime = None if mask is None else (self._cores_for_mask(mask), core_mask.core_mask_name(mask))
        cores = runtime[0] if runtime else 0
        per_set: List[Tuple[List[Shape], Any]] = []
        if self._stage != Stage.LOADED:  # built or loaded: cost the compiled program's own tasks
            compiled = self._compiled("eval_perf")
            report = PerfReport(compiled.eval_perf(cache, cores), self._inputs)
            if compiled.shape_variants:  # config(dynamic_input): each set's program, set 0 first
                per_set = [(_input_shapes(compiled), report)] + [
                    (_input_shapes(v), PerfReport(v.eval_perf(cache, cores), self._inputs))
                    for v in compiled.shape_variants]
        else:  # only loaded: what a default build would compile to
            report = eval_perf(self._model, soc, op_target=self._config.get("op_target"),
                               single_core_mode=bool(self._config.get("single_core_mode")), dtype="int8",
                               optimize=True, tuning_cache=tuning_cache, cores=cores)
            report.inputs = self._inputs
        #: config(dynamic_input): [(input shapes, PerfReport)] per shape set (set 0 is the report itself); else [].
        report.shape_sets = per_set
        report.core_choice = (f"init_runtime(core_mask={runtime[1]}): {runtime[0]} core(s)" if runtime else
                              "before init_runtime: " + ("one core (single_core_mode)" if report.summary["cores"] == 1
                                                         else "all the SoC's cores"))
        for _, set_report in per_set:
            set_report.core_choice = report.core_choice
        if is_print:
            self._emit(dynamic_input.per_set_text("eval_perf", per_set) if per_set else str(report))
        if plot_path is not None:
            report.plot(plot_path)
            if int(report.summary["cores"]) > 1:  # the per-core timeline beside it
                report.plot_timeline(timeline_path(plot_path))
        return report

    def eval_memory(self, is_print: bool = True) -> "MemoryReport":
        """Device memory of the built (or loaded) model (RKNN-Toolkit2 ``eval_memory``).

        Weights as the NPU stores them, the activation arena of the memory plan (with its lower
        bound), the I/O buffers, the rest of the blob, and the total; per-tensor detail in
        ``["tensors"]`` (arena offset, live range) and ``["weights"]``. It reads the compiled
        model: after ``load_blob`` the blob's stored plan, after ``build`` the plan the compile
        made and the size of the blob ``export_blob`` writes. See :mod:`npuc.memory`.

        Args:
            is_print: print the report.

        Returns:
            A :class:`npuc.memory.MemoryReport` (a dict; ``str()`` is the printed text). For a
            ``config(dynamic_input)`` build it is set 0's, ``.shape_sets`` lists ``(input shapes,
            MemoryReport)`` per set, ``["runtime_arena_bytes"]`` is the largest set's arena (one
            program runs at a time, so that is what the runtime needs) and
            ``["shape_variant_reuse"]`` what the sets share in the blob; otherwise ``.shape_sets``
            is empty.

        Raises:
            NpucError: nothing built or loaded. ConfigError: no target_platform configured.
        """
        from npuc.memory import MemoryReport

        is_print = arg_check.flag("eval_memory", "is_print", is_print)
        compiled = self._compiled("eval_memory")
        report = MemoryReport(compiled.eval_memory())
        #: config(dynamic_input): [(input shapes, MemoryReport)] per shape set (set 0 is the report itself); else [].
        report.shape_sets = []
        if compiled.shape_variants:
            report.shape_sets = [(_input_shapes(compiled), report)] + [
                (_input_shapes(v), MemoryReport(v.eval_memory())) for v in compiled.shape_variants]
            # One program runs at a time, so the runtime needs the largest set's arena.
            report["runtime_arena_bytes"] = max(int(r["arena_bytes"]) for _, r in report.shape_sets)
            # Weights and the rest of the blob once (set 0's report counts the whole dynamic blob), the
            # largest set's arena and I/O buffers.
            report["runtime_total_bytes"] = (int(report["weight_bytes"]) + int(report["other_bytes"])
                                             + report["runtime_arena_bytes"]
                                             + max(int(r["io_bytes"]) for _, r in report.shape_sets))
            report["shape_variant_reuse"] = dict(compiled.shape_variant_reuse())
        if is_print:
            self._emit(dynamic_input.per_set_text("eval_memory", [(s, str(r)) for s, r in report.shape_sets])
                       + "\n\n" + dynamic_input.memory_summary(report.shape_sets, report["shape_variant_reuse"])
                       if report.shape_sets else str(report))
        return report

    def release(self) -> None:
        """Frees the model and runtime. The toolkit can load another model afterwards."""
        self._model = None
        self._runtime = None
        self._float_model = None
        self._reload = None
        self._stage = Stage.EMPTY
        self._inputs = JobInputs()

    def export_onnx(self, export_path: Union[str, os.PathLike]) -> int:
        """Writes the model as ONNX: the quantized model as QDQ after a quantizing ``build()``.

        After ``build(do_quantization=True)`` the file is standard ONNX QDQ: every int8
        activation (graph inputs too) is followed by QuantizeLinear -> DequantizeLinear with its
        scale and zero point, weights are int8 initializers with a (per-channel) DequantizeLinear,
        biases int32 at ``s_in * s_w``, FP16 nodes sit between Cast(float16) pairs and npuc's own
        ops are expanded to standard ones, so ONNX Runtime runs what :meth:`inference` simulates
        (within about one output step, see docs/quantization.md "QDQ export"). Otherwise (no
        build, or a float/FP16 build) it is the float graph as it stands (after ``build()``, the
        optimized one), where npuc's own fused ops (GLU, Gelu, ...) use the ``ai.npuc`` domain.
        Both pass ``onnx.checker``. Written to a temporary next to ``export_path`` and renamed into
        place (never half a file).

        Returns:
            0 on success.

        Raises:
            NpucError: no model loaded. UnsupportedOpError: an op without a standard ONNX form
            in a quantized model (named). OutputError: ``export_path`` is a file this toolkit
            read (the loaded model, ...) or a directory.
        """
        require("export_onnx", self._stage)
        quantized = None if self._built_float else self._simulator()
        int8 = quantized is not None and quantized.mode == "int8"
        with atomic_output(export_path, "the ONNX model", self._inputs) as tmp:
            (quantized if int8 else self._model).export_onnx(tmp)
        return 0

    def codegen(self, output_path: Union[str, os.PathLike], inputs: Optional[Sequence[Any]] = None,
                overwrite: bool = False) -> int:
        """Writes a C++ program that runs the built (or loaded) model with npuc's C++ runtime
        (RKNN-Toolkit2 ``codegen``): ``model.npub``, ``main.cpp``, ``CMakeLists.txt`` finding this
        npuc build's library, and ``inputs/input_<i>.npy`` from ``inputs`` (image or ``.npy``
        paths, one per model input). See :mod:`npuc.codegen`.

        Returns:
            0 on success.

        Raises:
            NotSupportedError: this npuc has no C++ build tree to link against (a pip install), or
                the model uses a custom op (``reg_custom_op``: Python code).
            OutputError: ``output_path`` is a file, or a non-empty folder without ``overwrite``.
            NpucError: nothing built or loaded; ConfigError: no target_platform.
        """
        from npuc import codegen as _codegen

        output_path = Path(arg_check.path("codegen", "output_path", output_path))
        overwrite = arg_check.flag("codegen", "overwrite", overwrite)
        compiled = self._compiled("codegen")
        custom = sorted(set(self._custom_ops) & set(self._model.op_histogram)) if self._model else []
        if custom:
            raise NotSupportedError(
                f"codegen: the model uses custom op(s) {', '.join(custom)}, whose compute is Python; the "
                "generated C++ program could not run them (a C++ program passes C++ definitions to "
                "npuc::deploy::BlobRunner, see docs/custom_ops.md); nothing was written")
        model_inputs = (self._simulator() or self._ensure_runtime()).inputs
        _codegen.write_program(output_path, overwrite, self.export_blob, inputs, len(model_inputs), compiled.soc,
                               self._model_name, "INT8" if compiled.quantized else "FP16")
        self._emit(f"codegen wrote {output_path}: build with `cmake -S {output_path} -B {output_path}/build && "
                   f"cmake --build {output_path}/build`")
        return 0

    def _new_job(self, files: Sequence[Any]) -> JobInputs:
        """The inputs of a job that starts by reading `files` ((path, role) pairs), checked against
        the verbose_file before anything is read or logged (see AppendedLog.guard)."""
        job = JobInputs()
        job.add_all(files)
        for handler in self._log.handlers:
            if isinstance(handler, AppendedLog):
                handler.guard(job)
        return job

    def _add_inputs(self, files: Sequence[Any]) -> None:
        """Adds `files` ((path, role) pairs) to the current job's inputs, checked like _new_job."""
        files = list(files)
        self._new_job(files)
        self._inputs.add_all(files)

    def _cores_for_mask(self, mask: object) -> int:
        """init_runtime(core_mask=...)'s core count on config(target_platform); ConfigError for a
        mask the SoC or a single_core_mode build cannot run (npuc.core_mask.cores_for_mask)."""
        from npuc._npuc import soc_profile

        value = core_mask.core_mask_value(mask, "init_runtime: core_mask")
        soc = self._config.get("target_platform")
        if not soc:
            if value == core_mask.NPU_CORE_AUTO:
                return 1
            raise ConfigError(f"init_runtime(core_mask={core_mask.core_mask_name(value)}) needs "
                              "config(target_platform=...) to know the SoC's NPU cores")
        single = bool(self._config.get("single_core_mode"))
        cached = getattr(self, "_compiled_model", None)
        if cached is not None and cached[0] is self._model:  # a loaded blob: its recorded options
            single = single or bool(cached[1].options.single_core_mode)
        return core_mask.cores_for_mask(value, soc, int(soc_profile(soc)["npu_cores"]), single)

    def _check_board_options(self, options: Dict[str, Any]) -> None:
        """init_runtime's board options (RKNN_BOARD_OPTIONS): an unknown name is refused, a
        setting that would change what happens on a board is named in a warning (the host
        simulator's results do not depend on it), never ignored silently."""
        unknown = sorted(set(options) - set(RKNN_BOARD_OPTIONS))
        if unknown:
            raise ConfigError(f"init_runtime: unknown argument(s) {', '.join(shown_key(k) for k in unknown)}; "
                              f"valid: target, max_run_bytes, {', '.join(RKNN_BOARD_OPTIONS)}")
        for key, value in options.items():
            if value not in (None, False, RKNN_BOARD_OPTIONS[key]):
                self._log.warning("init_runtime(%s=%s) has no effect: npuc runs on the host simulator, whose outputs "
                                  "do not depend on it", key, shown(value))

    def _emit(self, text: str) -> None:
        """Prints a report block (RKNN prints its build reports too) and logs it to the
        verbose_file; not through the verbose stderr log, which would show it twice."""
        print(text, flush=True)
        self._log_to_files(text)

    def _log_to_files(self, text: str) -> None:
        """Writes `text` to the verbose_file (if any), formatted like every other logged line."""
        record = self._log.makeRecord(self._log.name, logging.INFO, __file__, 0, "%s", (text,), None)
        for handler in self._log.handlers:
            if isinstance(handler, AppendedLog):
                handler.handle(record)

    # ------------------------------------------------------------------ introspection

    @property
    def model(self) -> Optional[Model]:
        """The imported model (None before ``load_onnx``)."""
        return self._model

    def get_config(self) -> Dict[str, Any]:
        """A copy of the configuration set so far."""
        return dict(self._config)

    # ------------------------------------------------------------------ helpers

    def _ensure_runtime(self) -> Runtime:
        if self._model is None:
            raise NpucError("no model loaded: call load_onnx() first")
        if self._runtime is None:
            self._runtime = Runtime(self._model)
            self._log.info("runtime: memory %s", self._runtime.memory_stats)
        return self._runtime


# ---------------------------------------------------------------------- module helpers


def _make_logger(owner: object, verbose: bool, verbose_file: Optional[str]) -> logging.Logger:
    # Not through logging.getLogger: its registry keeps every logger forever, and a later Toolkit
    # with a recycled id() would inherit this one's handlers (doubled lines, an old verbose_file).
    log = logging.Logger(f"npuc.toolkit.{id(owner):x}")
    log.propagate = False
    log.setLevel(logging.INFO if (verbose or verbose_file) else logging.WARNING)
    fmt = logging.Formatter("npuc: %(message)s")
    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(fmt)
        log.addHandler(handler)
    if verbose_file:
        handler = AppendedLog(verbose_file)
        handler.setFormatter(fmt)
        log.addHandler(handler)
    return log


def _close_logger(log: logging.Logger) -> None:
    """Closes and detaches the logger's handlers (the verbose_file is flushed and released)."""
    for handler in list(log.handlers):
        handler.close()
        log.removeHandler(handler)


def _float_lists(values: Sequence[Any]) -> List[List[float]]:
    """mean/std values as one list of floats per input (a flat list is one input's channels)."""
    rows = list(values)
    if rows and all(np.isscalar(v) for v in rows):
        rows = [rows]
    return [[float(v) for v in np.asarray(row, dtype=np.float64).reshape(-1)] for row in rows]


def _check_dataset(call: str, dataset: Any) -> None:
    """A dataset argument: None, a dataset.txt path, or an iterable of samples (see npuc.dataset)."""
    if dataset is None or isinstance(dataset, (str, os.PathLike)):
        if dataset is not None:
            arg_check.path(call, "dataset", dataset)
        return
    if isinstance(dataset, (bytes, bytearray, Mapping, np.ndarray)) or not isinstance(dataset, Iterable):
        raise ConfigError(f"{call}(dataset=...): expected a dataset.txt path or an iterable of samples (a list of "
                          f"arrays, or of lists of arrays), got {type(dataset).__name__} {shown(dataset)}")


def _refuse_raw_images_in_memory(call: str, dataset: Any, preprocessor: InputPreprocessor,
                                 infos: Sequence[Dict[str, Any]]) -> None:
    """In-memory samples are taken as the model's input as they are (no mean/std, no layout
    change), unlike the images a dataset.txt lists. A uint8 array for an input that config() gives
    mean/std is a raw image that would calibrate silently wrong (measured: INT8 cosine 0.09 against
    0.999 from a dataset.txt on yolov3-tiny), so it is refused. A generator is not looked into."""
    if isinstance(dataset, (str, os.PathLike)) or not isinstance(dataset, Sequence):
        return
    for index, sample in enumerate(dataset):
        arrays = [sample] if isinstance(sample, np.ndarray) else list(sample) if isinstance(sample, (list, tuple)) else []
        for i, a in enumerate(arrays):
            if isinstance(a, np.ndarray) and a.dtype == np.uint8 and i < len(infos) and preprocessor.configured(i):
                raise InputError(
                    f"{call}(dataset=...): sample {index}, input '{infos[i]['name']}' is a uint8 array: in-memory "
                    f"samples are used as the model's input as they are (no mean_values/std_values), so this raw "
                    f"image would calibrate wrongly. List the image files in a dataset.txt (normalized as inference "
                    f"inputs are), or pass float32 arrays already normalized")


def _layout_fits(x: Any, data_format: str, info: Dict[str, Any], passthrough: int) -> bool:
    """Whether `x` has a shape input `info` takes under inference's layout rules (_to_nchw): what
    config(dynamic_input) compares with each set before any preprocessing."""
    shape, target = tuple(np.shape(x)), tuple(int(d) for d in info["shape"])
    if passthrough or len(target) != 4 or data_format == "nchw":
        return shape == target
    if data_format == "auto":
        return fitting_layout(shape, target) is not None
    nhwc = shape if len(shape) == 4 else (1,) + shape if len(shape) == 3 else None
    return nhwc is not None and (nhwc[0], nhwc[3], nhwc[1], nhwc[2]) == target


def _input_shapes(compiled: Any) -> List[Shape]:
    """A compiled model's input shapes (one config(dynamic_input) set)."""
    return [list(i["shape"]) for i in compiled.model.inputs]


def _io_summary(infos: Sequence[Dict[str, Any]]) -> str:
    return ", ".join(f"{d['name']}: {d['dtype']}{list(d['shape'])}" for d in infos)


def _as_input_list(inputs: Any, expected_count: int) -> List[Any]:
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    if not isinstance(inputs, (list, tuple)):
        raise InputError(f"inputs must be a list of arrays, got {type(inputs).__name__}")
    if len(inputs) != expected_count:
        raise InputError(f"the model has {expected_count} input(s), got {len(inputs)}")
    return list(inputs)


def _per_input(what: str, value: Any, count: int, default: Any, choices: Sequence[Any]) -> List[Any]:
    """One value for all inputs or a list with one per input, each one of `choices` (strings
    compared case-insensitively; True/False count as 1/0)."""
    if value is None:
        return [default] * count
    if isinstance(value, (list, tuple)):
        values = list(value)
        if len(values) != count:
            raise InputError(f"{what} has {len(values)} entries for {count} input(s)")
    else:
        values = [value] * count
    for i, v in enumerate(values):
        key = v.lower() if isinstance(v, str) else v
        if not isinstance(key, (str, numbers.Integral)) or key not in choices:
            raise InputError(f"{what}: expected one of {', '.join(repr(c) for c in choices)} (one value, or one per "
                             f"input), got {type(v).__name__} {shown(v)}" + (f" at [{i}]" if isinstance(value, (list, tuple)) else ""))
    return [v.lower() if isinstance(v, str) else int(v) for v in values]


def _to_nchw(x: Any, data_format: str, info: Dict[str, Any], where: str) -> Any:
    """`x` in the model's NCHW layout, for a 4-D input (data_format already checked by _per_input):
    'nhwc' transposes (a 3-D HWC array gets its batch dim first); 'auto' (the default) lets the
    array's shape decide, as calibration .npy files do: the model's shape as is, an NHWC array
    transposed, either without the batch dim given one. Other inputs pass unchanged."""
    if len(info["shape"]) != 4 or data_format == "nchw":
        return x
    x = as_array(x, info, where)
    if data_format == "auto":
        layout = fitting_layout(tuple(x.shape), tuple(info["shape"]))
        if layout is None:
            return x  # coerce_input names the shape it expects
        add_batch, transpose = layout
    else:
        add_batch, transpose = x.ndim == 3, True
        if x.ndim not in (3, 4):
            raise InputError(f"input '{info['name']}' expects a 4-D NHWC (or 3-D HWC) array for data_format='nhwc', "
                             f"got shape {list(x.shape)}")
    if add_batch:
        x = x[np.newaxis]
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if transpose else x


def _optimize(source: Any, args: Dict[str, Any], staging: Optional[Any]) -> Tuple[Any, Dict[str, Any]]:
    """optimize() with what build() decided (Toolkit._optimize_args)."""
    return optimize(source, args["level"], args["disabled"], staging, soc=args["soc"], dtype=args["dtype"],
                    op_target=args["op_target"])


def _reload_onnx(source: Union[str, bytes], names: Sequence[str], outputs: Sequence[str], custom_ops: Any,
                 strict: bool, log: logging.Logger, sizes: List[Shape]) -> Any:
    """load_onnx's import again, at other input shapes (Toolkit._reload)."""
    load = partial(_load_onnx, custom_ops=custom_ops, strict=strict, log=log)
    return load_at_batch(load, source, names, check_shapes(sizes, "input shapes"), outputs)


def _reload_pytorch(model: Any, inputs: Optional[Sequence[str]], outputs: Optional[Sequence[str]], opset: int,
                    custom_ops: Any, log: logging.Logger, sizes: List[Shape]) -> Any:
    """load_pytorch's export and import again, at other input shapes (Toolkit._reload)."""
    from npuc.pytorch_import import pytorch_to_onnx

    sizes = check_shapes(sizes, "input shapes")
    onnx_bytes, names = pytorch_to_onnx(model, sizes, inputs, outputs, opset)
    load = partial(_load_onnx, custom_ops=custom_ops, strict=False, log=log)
    return load_at_batch(load, onnx_bytes, names, sizes, [])


def _load_onnx(source: Union[str, bytes], names: Sequence[str], sizes: List[Shape], outputs: Sequence[str],
               custom_ops: Any, strict: bool, log: logging.Logger) -> Any:
    """qdq_import.load with the loader arguments first (onnx_rebatch.load_at_batch's ``load``)."""
    return qdq_import.load(source, names, sizes, outputs, custom_ops, strict, log)
