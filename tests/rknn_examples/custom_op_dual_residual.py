"""examples/functions/custom_op/convert_custom_onnx_to_rknn/test.py: a Python custom operator
(reg_custom_op returns -1: not in npuc yet)."""
import numpy as np
from npuc.rknn.api import RKNN


class cstDualResidual:
    op_type = 'cstDualResidual'

    def shape_infer(self, node, in_shapes, in_dtypes):
        return in_shapes.copy(), in_dtypes.copy()

    def compute(self, node, inputs):
        x, y = inputs
        alpha = 0.5
        return [x * alpha - y, y * alpha - x]


if __name__ == '__main__':
    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(target_platform='rk3588')
    print('done')

    print('--> Register cstDualResidual op')
    ret = rknn.reg_custom_op(cstDualResidual())
    if ret != 0:
        print('Register cstDualResidual op failed!')
        exit(ret)
    print('done')

    ret = rknn.load_onnx(model='dual_residual.onnx')
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    ret = rknn.build(do_quantization=False)
    if ret != 0:
        print('Build model failed!')
        exit(ret)
    rknn.release()
