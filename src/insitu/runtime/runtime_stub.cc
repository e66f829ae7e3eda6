// Placeholder so the runtime layer has a source until executable.cc lands.
namespace insitu {}
