"""examples/functions/dynamic_shape/test.py: three input-shape sets of a Caffe MobileNetV2 (load_caffe
loads it; build() returns -1: dynamic_input re-imports the model at each set, which the Caffe
loader's fixed shapes cannot do; the same script with load_onnx builds)."""
import numpy as np
import cv2
from npuc.rknn.api import RKNN

if __name__ == '__main__':
    rknn = RKNN(verbose=True)
    dynamic_input = [[[1, 3, 256, 256]], [[1, 3, 160, 160]], [[1, 3, 224, 224]]]

    print('--> Config model')
    rknn.config(mean_values=[103.94, 116.78, 123.68], std_values=[58.82, 58.82, 58.82], quant_img_RGB2BGR=True,
                target_platform='rk3566', dynamic_input=dynamic_input)
    print('done')

    print('--> Loading model')
    ret = rknn.load_caffe(model='./mobilenet_v2_deploy.prototxt', blobs='./mobilenet_v2.caffemodel')
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    print('done')

    print('--> Building model')
    ret = rknn.build(do_quantization=True, dataset='./dataset.txt')
    if ret != 0:
        print('Build model failed!')
        exit(ret)
    print('done')

    ret = rknn.init_runtime()
    if ret != 0:
        print('Init runtime environment failed!')
        exit(ret)
    img = cv2.imread('./dog_224x224.jpg')
    for size in (224, 160, 256):
        x = np.transpose(np.expand_dims(cv2.resize(img, (size, size)), 0), (0, 3, 1, 2))
        outputs = rknn.inference(inputs=[x], data_format=['nchw'])
    rknn.release()
