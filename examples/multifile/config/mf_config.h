#pragma once
// Constants of the multifile example, in their own include directory (-I config).
#define MF_BLOCK 256
#define MF_RADIUS 2
#define MF_BIAS_SLOTS 256
