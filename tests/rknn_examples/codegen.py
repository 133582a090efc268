"""examples/functions/codegen/test.py: a C++ deploy program generated for rk3562 from a Caffe
MobileNetV2 (runs to the end)."""
from npuc.rknn.api import RKNN

if __name__ == '__main__':
    rknn = RKNN(verbose=False)

    print('--> Config model')
    rknn.config(mean_values=[103.94, 116.78, 123.68], std_values=[58.82, 58.82, 58.82], quant_img_RGB2BGR=True,
                target_platform='rk3562')
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
    ret = rknn.export_rknn('./mobilenet_v2.rknn')
    if ret != 0:
        print('Export rknn model failed!')
        exit(ret)
    ret = rknn.codegen(output_path='./rknn_app_demo', inputs=['./dog_224x224.jpg'], overwrite=True)
    if ret != 0:
        print('Codegen failed!')
        exit(ret)
    rknn.release()
