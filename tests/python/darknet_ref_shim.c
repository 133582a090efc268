/* The darknet library's own forward pass, for npuc's darknet frontend tests (darknet_ref.py).
 * Compiled at test time against Debian's libdarknet (package `darknet`): the layer struct of
 * darknet.h is too large to mirror in ctypes, so this shim hands out only what the tests read. */
#include <darknet.h>
#include <string.h>

void* dn_load(char* cfg, char* weights) {
  network* net = load_network(cfg, weights, 0);
  set_batch_network(net, 1);
  return net;
}

int dn_num_layers(void* net) { return ((network*)net)->n; }

/* Runs the network on a CHW float image (darknet's input: RGB scaled to 0..1). */
void dn_predict(void* net, float* input) { network_predict((network*)net, input); }

/* Layer i's output after the last dn_predict: its size, then a copy into dst. */
int dn_layer_outputs(void* net, int i) { return ((network*)net)->layers[i].outputs; }
void dn_layer_output(void* net, int i, float* dst) {
  layer l = ((network*)net)->layers[i];
  memcpy(dst, l.output, sizeof(float) * (size_t)l.outputs);
}

void dn_free(void* net) { free_network((network*)net); }
