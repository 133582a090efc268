"""examples/caffe/mobilenet_v2/test.py: Caffe frontend (load_caffe, INT8 build, export, inference)."""
import numpy as np
import cv2
from npuc.rknn.api import RKNN


def show_outputs(outputs):
    np.save('./caffe_mobilenet_v2_0.npy', outputs[0])
    output = outputs[0].reshape(-1)
    labels = [line.strip().split(':')[-1] for line in open('./labels.txt')]
    print('mobilenet_v2\n-----TOP 5-----')
    for i in np.argsort(output)[::-1][:5]:
        print(f'[{i:>3d}] score:{output[i]:.6f} class:"{labels[i]}"' if output[i] > 0 else '[ -1]: 0.0')


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
    ret = rknn.build(do_quantization=True, dataset='./dataset.txt')
    if ret != 0:
        print('Build model failed!')
        exit(ret)
    print('done')

    print('--> Export rknn model')
    ret = rknn.export_rknn('./mobilenet_v2.rknn')
    if ret != 0:
        print('Export rknn model failed!')
        exit(ret)
    print('done')

    img = cv2.imread('./dog_224x224.jpg')
    img = np.expand_dims(img, 0)

    print('--> Init runtime environment')
    ret = rknn.init_runtime()
    if ret != 0:
        print('Init runtime environment failed!')
        exit(ret)
    print('done')

    print('--> Running model')
    outputs = rknn.inference(inputs=[img], data_format=['nhwc'])
    show_outputs(outputs)
    print('done')

    rknn.release()
