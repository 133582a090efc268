"""examples/functions/multi_batch/test.py: rknn_batch_size=4 on a Caffe MobileNetV2 (load_caffe
loads it; build() returns -1: batch > 1 re-imports the model at batch N, which a Caffe net's fixed
shapes do not allow; ONNX and PyTorch models build at batch N)."""
import numpy as np
import cv2
from npuc.rknn.api import RKNN

if __name__ == '__main__':
    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(mean_values=[103.94, 116.78, 123.68], std_values=[58.82, 58.82, 58.82], quant_img_RGB2BGR=True,
                target_platform='rk3566')
    print('done')

    print('--> Loading model')
    ret = rknn.load_caffe(model='./mobilenet_v2_deploy.prototxt', blobs='./mobilenet_v2.caffemodel')
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    print('done')

    print('--> Building model')
    ret = rknn.build(do_quantization=True, dataset='./dataset.txt', rknn_batch_size=4)
    if ret != 0:
        print('Build model failed!')
        exit(ret)
    print('done')

    ret = rknn.export_rknn('./mobilenet_v2.rknn')
    if ret != 0:
        print('Export rknn model failed!')
        exit(ret)
    img = np.expand_dims(cv2.imread('./dog_224x224.jpg'), 0)
    img = np.concatenate((img, img, img, img), axis=0)
    ret = rknn.init_runtime()
    if ret != 0:
        print('Init runtime environment failed!')
        exit(ret)
    outputs = rknn.inference(inputs=[img], data_format=['nhwc'])
    rknn.release()
