"""examples/onnx/resnet50v2/test.py: ONNX classifier, INT8 for rk3566, one image NHWC."""
import numpy as np
import cv2
from npuc.rknn.api import RKNN

ONNX_MODEL = 'resnet50v2.onnx'
RKNN_MODEL = 'resnet50v2.rknn'


def show_outputs(outputs):
    output = outputs[0][0]
    index = sorted(range(len(output)), key=lambda k: output[k], reverse=True)
    labels = open('./labels.txt').readlines()
    top5 = 'resnet50v2\n-----TOP 5-----\n'
    for i in range(5):
        top5 += '[{:>3d}] score:{:.6f} class:"{}"\n'.format(index[i], output[index[i]],
                                                           labels[index[i]].strip().split(':')[-1])
    print(top5.strip())


if __name__ == '__main__':
    rknn = RKNN(verbose=True)

    print('--> config model')
    rknn.config(mean_values=[123.675, 116.28, 103.53], std_values=[58.82, 58.82, 58.82], target_platform='rk3566')
    print('done')

    print('--> Loading model')
    ret = rknn.load_onnx(model=ONNX_MODEL)
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
    ret = rknn.export_rknn(RKNN_MODEL)
    if ret != 0:
        print('Export rknn model failed!')
        exit(ret)
    print('done')

    img = cv2.imread('./dog_224x224.jpg')
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    img = np.expand_dims(img, 0)

    print('--> Init runtime environment')
    ret = rknn.init_runtime()
    if ret != 0:
        print('Init runtime environment failed!')
        exit(ret)
    print('done')

    print('--> Running model')
    outputs = rknn.inference(inputs=[img], data_format=['nhwc'])
    np.save('./onnx_resnet50v2_0.npy', outputs[0])
    x = outputs[0]
    output = np.exp(x) / np.sum(np.exp(x))
    show_outputs([output])
    print('done')

    rknn.release()
