"""examples/pytorch/resnet18/test.py: a TorchScript file through load_pytorch, INT8 for rk3566,
one image NHWC (torchvision weights: pretrained=False, nothing is downloaded)."""
import os
import numpy as np
import cv2
from npuc.rknn.api import RKNN


def export_pytorch_model():
    import torch
    import torchvision.models as models
    torch.manual_seed(0)
    net = models.resnet18(pretrained=False)
    net.eval()
    trace_model = torch.jit.trace(net, torch.Tensor(1, 3, 224, 224))
    trace_model.save('./resnet18.pt')


def show_outputs(output):
    index = sorted(range(len(output)), key=lambda k: output[k], reverse=True)
    labels = open('./labels.txt').readlines()
    top5 = 'resnet18\n-----TOP 5-----\n'
    for i in range(5):
        top5 += '[{:>3d}] score:{:.6f} class:"{}"\n'.format(index[i], output[index[i]],
                                                           labels[index[i]].strip().split(':')[-1])
    print(top5.strip())


def softmax(x):
    return np.exp(x) / sum(np.exp(x))


if __name__ == '__main__':
    model = './resnet18.pt'
    if not os.path.exists(model):
        export_pytorch_model()

    input_size_list = [[1, 3, 224, 224]]

    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(mean_values=[123.675, 116.28, 103.53], std_values=[58.395, 58.395, 58.395], target_platform='rk3566')
    print('done')

    print('--> Loading model')
    ret = rknn.load_pytorch(model=model, input_size_list=input_size_list)
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
    ret = rknn.export_rknn('./resnet_18.rknn')
    if ret != 0:
        print('Export rknn model failed!')
        exit(ret)
    print('done')

    img = cv2.imread('./space_shuttle_224.jpg')
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
    np.save('./pytorch_resnet18_0.npy', outputs[0])
    show_outputs(softmax(np.array(outputs[0][0])))
    print('done')

    rknn.release()
