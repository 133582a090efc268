"""examples/functions/npu_device_test/test.py: board checks (accuracy_analysis on a target,
encryption, list_devices, init_runtime(target), get_sdk_version) after a Caffe build (it stops
at accuracy_analysis(target=...): no board; the board calls answer as tests/python/test_rknn_face.py checks)."""
import numpy as np
import cv2
from npuc.rknn.api import RKNN

if __name__ == '__main__':
    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(mean_values=[103.94, 116.78, 123.68], std_values=[58.82, 58.82, 58.82], quant_img_RGB2BGR=True,
                target_platform='rk3588')
    print('done')

    print('--> Loading model')
    ret = rknn.load_caffe(model='./mobilenet_v2_deploy.prototxt', blobs='./mobilenet_v2.caffemodel')
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    print('done')

    ret = rknn.build(do_quantization=True, dataset='./dataset.txt')
    if ret != 0:
        print('Build model failed!')
        exit(ret)
    ret = rknn.accuracy_analysis(inputs=['./dog_224x224.jpg'], output_dir='./snapshot', target='rk3588')
    if ret != 0:
        print('Accuracy analysis failed!')
        exit(ret)
    ret = rknn.export_rknn('./mobilenet_v2.rknn')
    if ret != 0:
        print('Export rknn model failed!')
        exit(ret)
    ret = rknn.export_encrypted_rknn_model('./mobilenet_v2.rknn', None, 3)
    rknn.release()

    rknn = RKNN(verbose=True)
    ret = rknn.load_rknn('./mobilenet_v2.rknn')
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    rknn.list_devices()
    ret = rknn.init_runtime(target='rk3588', perf_debug=True, eval_mem=True)
    if ret != 0:
        print('Init runtime environment failed!')
        exit(ret)
    print(rknn.get_sdk_version())
    rknn.eval_perf()
    rknn.eval_memory()
    outputs = rknn.inference(inputs=[np.expand_dims(cv2.imread('./dog_224x224.jpg'), 0)], data_format=['nhwc'])
    rknn.release()
