"""examples/functions/custom_op/non-onnx_standard/test.py: YOLOX with every Sigmoid renamed to a
user op (cstSigmoid, registered in Python), INT8 for rk3588 calibrated on dataset.txt, a letterboxed
RGB image NHWC, box decoding and NMS in numpy, result.jpg drawn with cv2."""
import numpy as np
import cv2
from npuc.rknn.api import RKNN

OBJ_THRESH = 0.25
NMS_THRESH = 0.45
MODEL_IN_SIZE = (640, 640)
CLASSES = tuple(f'class{i}' for i in range(80))


class cstSigmoid:
    op_type = 'cstSigmoid'

    def shape_infer(self, node, in_shapes, in_dtypes):
        return in_shapes.copy(), in_dtypes.copy()

    def compute(self, node, inputs):
        return [1.0 / (1.0 + np.exp(np.negative(inputs[0])))]


class LetterBoxInfo:
    def __init__(self, shape, new_shape, w_ratio, h_ratio, dw, dh):
        self.origin_shape, self.new_shape = shape, new_shape
        self.w_ratio, self.h_ratio, self.dw, self.dh = w_ratio, h_ratio, dw, dh

    def __repr__(self):
        return f'LetterBoxInfo(origin={self.origin_shape}, new={self.new_shape}, pad=({self.dw}, {self.dh}))'


def letter_box(im, new_shape):
    h, w = im.shape[:2]
    r = min(new_shape[0] / h, new_shape[1] / w)
    new_unpad = int(round(w * r)), int(round(h * r))
    dw, dh = (new_shape[1] - new_unpad[0]) / 2, (new_shape[0] - new_unpad[1]) / 2
    if (w, h) != new_unpad:
        im = cv2.resize(im, new_unpad, interpolation=cv2.INTER_LINEAR)
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    im = cv2.copyMakeBorder(im, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(0, 0, 0))
    return im, LetterBoxInfo((h, w), new_shape, r, r, dw, dh)


def box_process(position):
    grid_h, grid_w = position.shape[2:4]
    col, row = np.meshgrid(np.arange(grid_w), np.arange(grid_h))
    grid = np.stack([col, row])[None]
    stride = np.array([MODEL_IN_SIZE[1] // grid_h, MODEL_IN_SIZE[0] // grid_w]).reshape(1, 2, 1, 1)
    xy = (position[:, :2] + grid) * stride
    wh = np.exp(position[:, 2:4]) * stride
    return np.concatenate([xy - wh / 2, xy + wh / 2], axis=1)


def nms_boxes(boxes, scores):
    order, keep = scores.argsort()[::-1], []
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    while order.size:
        i = order[0]
        keep.append(i)
        lt = np.maximum(boxes[i, :2], boxes[order[1:], :2])
        rb = np.minimum(boxes[i, 2:], boxes[order[1:], 2:])
        inter = np.prod(np.clip(rb - lt + 0.00001, 0, None), axis=1)
        order = order[1:][inter / (areas[i] + areas[order[1:]] - inter) <= NMS_THRESH]
    return np.array(keep)


def post_process(outputs):
    def flat(x):
        return x.transpose(0, 2, 3, 1).reshape(-1, x.shape[1])

    heads = [o.reshape([1, -1] + list(o.shape[-2:])) for o in outputs]
    boxes = np.concatenate([flat(box_process(h[:, :4])) for h in heads])
    conf = np.concatenate([flat(h[:, 4:5]) for h in heads]).reshape(-1)
    probs = np.concatenate([flat(h[:, 5:]) for h in heads])
    scores = probs.max(-1) * conf
    keep = scores >= OBJ_THRESH
    boxes, classes, scores = boxes[keep], probs.argmax(-1)[keep], scores[keep]
    if not len(scores):
        return None, None, None
    picked = nms_boxes(boxes, scores)
    return boxes[picked], classes[picked], scores[picked]


def get_real_box(box, info):
    out = box.copy()
    out[:, [0, 2]] = np.clip((out[:, [0, 2]] - info.dw) / info.w_ratio, 0, info.origin_shape[1])
    out[:, [1, 3]] = np.clip((out[:, [1, 3]] - info.dh) / info.h_ratio, 0, info.origin_shape[0])
    return out


def draw(image, boxes, scores, classes):
    for box, score, cl in zip(boxes, scores, classes):
        x1, y1, x2, y2 = [int(b) for b in box]
        print(f'class: {CLASSES[cl]}, score: {score}')
        cv2.rectangle(image, (x1, y1), (x2, y2), (255, 0, 0), 2)
        cv2.putText(image, f'{CLASSES[cl]} {score:.2f}', (x1, y1 - 6), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 255), 2)


def edit_onnx(in_model, output_model):
    import onnx
    model = onnx.load(in_model)
    for node in model.graph.node:
        if node.op_type == 'Sigmoid':
            node.op_type = 'cstSigmoid'
    onnx.save(model, output_model)


if __name__ == '__main__':
    model_path = 'yolox_s.onnx'
    custom_model_path = 'yolox_s_custom.onnx'
    edit_onnx(model_path, custom_model_path)

    rknn = RKNN(verbose=True)

    print('--> Config model')
    rknn.config(mean_values=[[0, 0, 0]], std_values=[[1, 1, 1]], target_platform='rk3588')
    print('done')

    print('--> Register cstSigmoid op')
    ret = rknn.reg_custom_op(cstSigmoid())
    if ret != 0:
        print('Register cstSigmoid op failed!')
        exit(ret)
    print('done')

    print('--> Loading model')
    ret = rknn.load_onnx(model=custom_model_path, input_size_list=[[1, 3, MODEL_IN_SIZE[1], MODEL_IN_SIZE[0]]])
    if ret != 0:
        print('Load model failed!')
        exit(ret)
    print('done')

    print('--> Building model')
    ret = rknn.build(do_quantization=True, dataset='dataset.txt')
    if ret != 0:
        print('Build model failed!')
        exit(ret)
    print('done')

    print('--> Export rknn model')
    ret = rknn.export_rknn('yolox_s_custom.rknn')
    if ret != 0:
        print('Export rknn model failed!')
        exit(ret)
    print('done')

    print('--> Init runtime')
    ret = rknn.init_runtime()
    if ret != 0:
        print('Init runtime failed!')
        exit(ret)
    print('done')

    img_src = cv2.imread('bus.jpg')
    img, letter_box_info = letter_box(img_src.copy(), (MODEL_IN_SIZE[1], MODEL_IN_SIZE[0]))
    print(letter_box_info)
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)

    print('--> Inference model')
    outputs = rknn.inference(inputs=[img])
    for i in range(3):
        np.save(f'./functions_custom_op_non-onnx_standard_{i}.npy', outputs[i])

    boxes, classes, scores = post_process(outputs)
    img_p = img_src.copy()
    if boxes is not None:
        draw(img_p, get_real_box(boxes, letter_box_info), scores, classes)
    cv2.imwrite('result.jpg', img_p)
    print('Save results to result.jpg!')

    rknn.release()
