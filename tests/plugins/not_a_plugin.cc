// Defect: an ordinary shared library that happens to be named liboar_plugin_not_a_plugin.so; it
// exports nothing of the oar ABI. The loader must skip it.
extern "C" __attribute__((visibility("default"))) int not_an_oar_function(int x) { return x + 1; }
