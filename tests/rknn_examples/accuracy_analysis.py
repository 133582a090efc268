"""examples/functions/accuracy_analysis/test.py: build INT8, analyse one image, read RKNN's text
dumps of the output from snapshot/golden and snapshot/simulator."""
import numpy as np
from npuc.rknn.api import RKNN

ONNX_MODEL = 'resnet50v2.onnx'
OUTPUT_TENSOR = 'output'  # the stand-in's output name (resnetv24_dense0_fwd in the original model)


def softmax(x):
    return np.exp(x) / np.sum(np.exp(x))


def show_outputs(output):
    index = sorted(range(len(output)), key=lambda k: output[k], reverse=True)
    labels = open('./labels.txt').readlines()
    top5 = '-----TOP 5-----\n'
    for i in range(5):
        top5 += '[{:>3d}] score:{:.6f} class:"{}"\n'.format(index[i], output[index[i]],
                                                           labels[index[i]].strip().split(':')[-1])
    print(top5.strip())


if __name__ == '__main__':
    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(mean_values=[123.68, 116.28, 103.53], std_values=[57.38, 57.38, 57.38], target_platform='rk3566')
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

    print('--> Accuracy analysis')
    ret = rknn.accuracy_analysis(inputs=['./dog_224x224.jpg'], output_dir='./snapshot')
    if ret != 0:
        print('Accuracy analysis failed!')
        exit(ret)
    print('done')

    print('float32:')
    output = np.genfromtxt('./snapshot/golden/{}.txt'.format(OUTPUT_TENSOR))
    show_outputs(softmax(output))

    print('quantized:')
    output = np.genfromtxt('./snapshot/simulator/{}.txt'.format(OUTPUT_TENSOR))
    show_outputs(softmax(output))

    rknn.release()
