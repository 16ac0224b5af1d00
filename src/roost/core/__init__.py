"""Pure scheduling logic: state in, plan out; no sockets, clocks or files."""
