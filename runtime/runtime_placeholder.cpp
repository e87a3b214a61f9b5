// Keeps the library non-empty while its parts are being added.
namespace gptoss { int runtime_library_marker = 0; }
