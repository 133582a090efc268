"""examples/functions/custom_op/convert_custom_onnx_to_rknn/test.py: an ONNX model whose one node is
a user op of the rknn_cst domain (cstDualResidual, two inputs, two outputs, an 'alpha' attribute),
registered in Python, built in FP16, run on NHWC copies of the saved NCHW inputs and compared with
the saved outputs by cosine."""
import numpy as np
from npuc.rknn.api import RKNN
from npuc.rknn.api.custom_op import get_node_attr
from scipy.spatial import distance


class cstDualResidual:
    op_type = 'cstDualResidual'

    def shape_infer(self, node, in_shapes, in_dtypes):
        return in_shapes.copy(), in_dtypes.copy()

    def compute(self, node, inputs):
        x, y = inputs[0], inputs[1]
        alpha = get_node_attr(node, 'alpha')
        return [x * alpha - y, y * alpha - x]


if __name__ == '__main__':
    custom_model_path = 'dual_residual.onnx'

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

    print('--> Loading model')
    ret = rknn.load_onnx(model=custom_model_path)
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    print('done')

    print('--> Building model')
    ret = rknn.build(do_quantization=False)
    if ret != 0:
        print('Build model failed!')
        exit(ret)
    print('done')

    print('--> Export rknn model')
    ret = rknn.export_rknn('dual_residual_custom.rknn')
    if ret != 0:
        print('Export rknn model failed!')
        exit(ret)
    print('done')

    print('--> Init runtime')
    ret = rknn.init_runtime()
    if ret != 0:
        print('Init runtime failed!')
        exit(ret)
    print('done')

    in_data_0 = np.transpose(np.load('dual_residual_input_0.npy'), (0, 2, 3, 1))
    in_data_1 = np.transpose(np.load('dual_residual_input_1.npy'), (0, 2, 3, 1))
    outputs = rknn.inference(inputs=[in_data_0, in_data_1])

    for i in range(2):
        golden = np.load(f'dual_residual_output_{i}.npy').astype(np.float32).ravel()
        cosine = 1 - distance.cosine(outputs[i].astype(np.float32).ravel(), golden)
        print(f"cos distance for {i}th output: {cosine:.5f}")

    rknn.release()
