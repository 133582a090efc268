"""examples/onnx/yolov5/test.py: YOLOv5 (three heads, no NMS in the model), INT8 for rk3566, a
640x640 RGB image NHWC, box decoding and NMS in numpy, result.jpg drawn with cv2."""
import numpy as np
import cv2
from npuc.rknn.api import RKNN

ONNX_MODEL = 'yolov5s_relu.onnx'
RKNN_MODEL = 'yolov5s_relu.rknn'
IMG_PATH = './bus.jpg'
DATASET = './dataset.txt'
QUANTIZE_ON = True
OBJ_THRESH = 0.25
NMS_THRESH = 0.45
IMG_SIZE = 640
ANCHORS = [[10, 13], [16, 30], [33, 23], [30, 61], [62, 45], [59, 119], [116, 90], [156, 198], [373, 326]]
MASKS = [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


def decode(head, mask):
    """head [h, w, 3, 85] of sigmoid outputs -> boxes (x1, y1, x2, y2), confidences, class scores."""
    grid_h, grid_w = head.shape[:2]
    stride = IMG_SIZE // grid_h
    col, row = np.meshgrid(np.arange(grid_w), np.arange(grid_h))
    grid = np.stack([col, row], axis=-1)[:, :, None, :]
    xy = (head[..., :2] * 2 - 0.5 + grid) * stride
    wh = (head[..., 2:4] * 2) ** 2 * np.array([ANCHORS[i] for i in mask])
    boxes = np.concatenate([xy - wh / 2, xy + wh / 2], axis=-1).reshape(-1, 4)
    return boxes, head[..., 4].reshape(-1), head[..., 5:].reshape(-1, head.shape[-1] - 5)


def nms(boxes, scores):
    order, keep = scores.argsort()[::-1], []
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    while order.size:
        i = order[0]
        keep.append(i)
        lt = np.maximum(boxes[i, :2], boxes[order[1:], :2])
        rb = np.minimum(boxes[i, 2:], boxes[order[1:], 2:])
        inter = np.prod(np.clip(rb - lt, 0, None), axis=1)
        order = order[1:][inter / (areas[i] + areas[order[1:]] - inter + 1e-9) <= NMS_THRESH]
    return keep


def yolov5_post_process(heads):
    boxes, conf, probs = zip(*(decode(h, m) for h, m in zip(heads, MASKS)))
    boxes, conf, probs = np.concatenate(boxes), np.concatenate(conf), np.concatenate(probs)
    classes = probs.argmax(-1)
    scores = conf * probs.max(-1)
    keep = scores >= OBJ_THRESH
    boxes, classes, scores = boxes[keep], classes[keep], scores[keep]
    picked = [i for c in set(classes.tolist()) for i in np.flatnonzero(classes == c)[nms(boxes[classes == c], scores[classes == c])]]
    if not picked:
        return None, None, None
    return boxes[picked], classes[picked], scores[picked]


if __name__ == '__main__':
    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(mean_values=[[0, 0, 0]], std_values=[[255, 255, 255]], target_platform='rk3566')
    print('done')

    print('--> Loading model')
    ret = rknn.load_onnx(model=ONNX_MODEL)
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    print('done')

    print('--> Building model')
    ret = rknn.build(do_quantization=QUANTIZE_ON, dataset=DATASET)
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

    print('--> Init runtime environment')
    ret = rknn.init_runtime()
    if ret != 0:
        print('Init runtime environment failed!')
        exit(ret)
    print('done')

    img = cv2.imread(IMG_PATH)
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    img = cv2.resize(img, (IMG_SIZE, IMG_SIZE))

    print('--> Running model')
    img2 = np.expand_dims(img, 0)
    outputs = rknn.inference(inputs=[img2], data_format=['nhwc'])
    np.save('./onnx_yolov5_0.npy', outputs[0])
    np.save('./onnx_yolov5_1.npy', outputs[1])
    np.save('./onnx_yolov5_2.npy', outputs[2])
    print('done')

    heads = [np.transpose(o.reshape([3, -1] + list(o.shape[-2:])), (2, 3, 0, 1)) for o in outputs]
    boxes, classes, scores = yolov5_post_process(heads)
    img_1 = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    if boxes is not None:
        for (x1, y1, x2, y2), c, s in zip(boxes, classes, scores):
            cv2.rectangle(img_1, (int(x1), int(y1)), (int(x2), int(y2)), (255, 0, 0), 2)
        print('{} box(es)'.format(len(boxes)))
    cv2.imwrite('result.jpg', img_1)
    print('Save results to result.jpg!')

    rknn.release()
