#pragma once
// Grid and block into the driver's launch descriptions (CUlaunchConfig for cuLaunchKernelEx,
// CUDA_KERNEL_NODE_PARAMS for graph kernel nodes): the same six fields in each, written once.
namespace kerncap {

template <class Launch, class Grid, class Block>
void set_launch_dims(Launch& l, const Grid& grid, const Block& block) {
  l.gridDimX = grid[0];
  l.gridDimY = grid[1];
  l.gridDimZ = grid[2];
  l.blockDimX = block[0];
  l.blockDimY = block[1];
  l.blockDimZ = block[2];
}

}  // namespace kerncap
