"""examples/functions/hybrid_quant/step1.py with an ONNX model in place of the TensorFlow SSD
(load_onnx instead of load_tensorflow: the one change beyond paths), so that the hybrid flow runs
to the end: step 1 writes the model, data and cfg files named after the model."""
from npuc.rknn.api import RKNN

if __name__ == '__main__':
    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(mean_values=[127.5, 127.5, 127.5], std_values=[127.5, 127.5, 127.5], target_platform='rk3566')
    print('done')

    print('--> Loading model')
    ret = rknn.load_onnx(model='./ssd_mobilenet_v2.onnx')
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    print('done')

    print('--> hybrid_quantization_step1')
    ret = rknn.hybrid_quantization_step1(dataset='./dataset.txt', proposal=False)
    if ret != 0:
        print('hybrid_quantization_step1 failed!')
        exit(ret)
    print('done')
    print("After 'hybrid_quantization_step1', edit 'ssd_mobilenet_v2.quantization.cfg' "
          "(custom_quantize_layers: <output name>: float16) and run step2.")
    rknn.release()
