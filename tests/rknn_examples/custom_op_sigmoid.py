"""examples/functions/custom_op/non-onnx_standard/test.py: a YOLOX with a custom sigmoid
(reg_custom_op returns -1: not in npuc yet)."""
import numpy as np
from npuc.rknn.api import RKNN


class cstSigmoid:
    op_type = 'cstSigmoid'

    def shape_infer(self, node, in_shapes, in_dtypes):
        return in_shapes.copy(), in_dtypes.copy()

    def compute(self, node, inputs):
        return [1.0 / (1.0 + np.exp(-inputs[0]))]


if __name__ == '__main__':
    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(mean_values=[[0, 0, 0]], std_values=[[1, 1, 1]], target_platform='rk3588')
    print('done')

    print('--> Register cstSigmoid op')
    ret = rknn.reg_custom_op(cstSigmoid())
    if ret != 0:
        print('Register cstSigmoid op failed!')
        exit(ret)
    print('done')

    ret = rknn.load_onnx(model='yolox_s_cst_sigmoid.onnx', input_size_list=[[1, 3, 640, 640]])
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    rknn.release()
