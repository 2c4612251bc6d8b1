// Texture, surface and CUDA array programs for tests/gpu/texture_e2e.sh. One program, one
// mode per case (argv[1]); each launches its kernel three times on changing inputs (so a
// capture at --dispatch 1 has a BEFORE that differs from the first launch's) and prints
// "APP <mode> <checksum>" lines, identical with and without kerncap --continue.
//
//   linear    tex1Dfetch over cudaMalloc'ed memory (cudaResourceTypeLinear)
//   pitch2d   tex2D over cudaMallocPitch'ed memory (cudaResourceTypePitch2D), point filtering
//   array2d   tex2D over a 2D cudaArray, linear filtering, normalized coordinates, clamp
//   layered   tex2DLayered over a layered 2D cudaArray (4 layers)
//   array3d   tex3D over a 3D cudaArray, linear filtering
//   mipmap    tex2DLod over a mipmapped array (all levels read)
//   surface   surf2Dread/surf2Dwrite into a cudaArray: the kernel's only output is the array
//   struct    a by-value struct holding a texture handle, a pointer and scalars
//   texsurf   a texture over one array read, a surface over another written (handle values
//             of a texture and a surface may coincide: kerncap then refuses, see the script)
//   alias     refused by kerncap: a mipmapped array read whole and written through a level
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                     \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                               \
    }                                                                             \
  } while (0)

__global__ void texLinear(cudaTextureObject_t t, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(t, i) * 2.0f + i;
}

__global__ void texPitch(cudaTextureObject_t t, float* out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float>(t, x + 0.5f, y + 0.5f) - 0.5f * y;
}

__global__ void texArrayFilter(cudaTextureObject_t t, float* out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float>(t, (x + 0.25f) / w, (y + 0.75f) / h);
}

__global__ void texLayered(cudaTextureObject_t t, float* out, int w, int h, int layers) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  float s = 0;
  for (int l = 0; l < layers; ++l) s += (l + 1) * tex2DLayered<float>(t, x + 0.5f, y + 0.5f, l);
  out[y * w + x] = s;
}

__global__ void texVolume(cudaTextureObject_t t, float* out, int w, int h, int d) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x < w && y < h && z < d) out[(z * h + y) * w + x] = tex3D<float>(t, x + 0.3f, y + 0.6f, z + 0.5f);
}

__global__ void texMip(cudaTextureObject_t t, float* out, int w, int h, int levels) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  float s = 0;
  for (int l = 0; l < levels; ++l) s += tex2DLod<float>(t, (x + 0.5f) / w, (y + 0.5f) / h, (float)l) * (l + 1);
  out[y * w + x] = s;
}

__global__ void surfScale(cudaSurfaceObject_t s, int w, int h, float k) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  float v;
  surf2Dread(&v, s, x * sizeof(float), y);
  surf2Dwrite(v * k + x, s, x * sizeof(float), y);
}

struct Sampler {
  int n;
  float scale;
  cudaTextureObject_t tex;
  float* out;
  double bias;
};

__global__ void texStruct(Sampler s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < s.n) s.out[i] = tex1Dfetch<float>(s.tex, i) * s.scale + (float)s.bias;
}

__global__ void texToSurf(cudaTextureObject_t in, cudaSurfaceObject_t out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) surf2Dwrite(tex2D<float>(in, x + 0.5f, y + 0.5f) * 3.0f - y, out, x * 4, y);
}

__global__ void mipAlias(cudaTextureObject_t whole, cudaSurfaceObject_t level1, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) surf2Dwrite(tex2DLod<float>(whole, (x + 0.5f) / w, (y + 0.5f) / h, 0.0f), level1, x * 4, y);
}

namespace {

double checksum(const std::vector<float>& v) {
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * (1.0 + (i % 7));
  return s;
}

std::vector<float> ramp(size_t n, float k) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = k * ((i * 37) % 101) / 17.0f;
  return v;
}

cudaTextureDesc tex_desc(cudaTextureFilterMode f, bool normalized, cudaTextureAddressMode am = cudaAddressModeClamp) {
  cudaTextureDesc td{};
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = am;
  td.filterMode = f;
  td.readMode = cudaReadModeElementType;
  td.normalizedCoords = normalized;
  return td;
}

void print(const char* mode, int iter, const std::vector<float>& out) {
  std::printf("APP %s %d %.6f\n", mode, iter, checksum(out));
}

int linear() {
  const int n = 1 << 16;
  float *in, *out;
  CK(cudaMalloc(&in, n * sizeof(float)));
  CK(cudaMalloc(&out, n * sizeof(float)));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeLinear;
  rd.res.linear.devPtr = in;
  rd.res.linear.desc = cudaCreateChannelDesc<float>();
  rd.res.linear.sizeInBytes = n * sizeof(float);
  cudaTextureDesc td = tex_desc(cudaFilterModePoint, false);
  cudaTextureObject_t t;
  CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
  std::vector<float> h(n);
  for (int it = 0; it < 3; ++it) {
    auto v = ramp(n, it + 1.0f);
    CK(cudaMemcpy(in, v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    texLinear<<<n / 256, 256>>>(t, out, n);
    CK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
    print("linear", it, h);
  }
  CK(cudaDestroyTextureObject(t));
  return 0;
}

int pitch2d() {
  const int w = 300, hgt = 70;
  float *in, *out;
  size_t pitch;
  CK(cudaMallocPitch(&in, &pitch, w * sizeof(float), hgt));
  CK(cudaMalloc(&out, w * hgt * sizeof(float)));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypePitch2D;
  rd.res.pitch2D.devPtr = in;
  rd.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  rd.res.pitch2D.width = w;
  rd.res.pitch2D.height = hgt;
  rd.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc td = tex_desc(cudaFilterModePoint, false);
  cudaTextureObject_t t;
  CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
  std::vector<float> h(w * hgt);
  for (int it = 0; it < 3; ++it) {
    auto v = ramp(w * hgt, it + 2.0f);
    CK(cudaMemcpy2D(in, pitch, v.data(), w * sizeof(float), w * sizeof(float), hgt, cudaMemcpyHostToDevice));
    texPitch<<<dim3((w + 127) / 128, hgt), 128>>>(t, out, w, hgt);
    CK(cudaMemcpy(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    print("pitch2d", it, h);
  }
  return 0;
}

// A 2D/3D/layered float array filled from the host, with a texture over it.
struct ArrayTex {
  cudaArray_t array;
  cudaTextureObject_t tex;
};

ArrayTex make_array_tex(cudaExtent e, unsigned flags, const cudaTextureDesc& td) {
  ArrayTex a{};
  cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
  CK(cudaMalloc3DArray(&a.array, &cd, e, flags));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeArray;
  rd.res.array.array = a.array;
  CK(cudaCreateTextureObject(&a.tex, &rd, &td, nullptr));
  return a;
}

void fill_array(cudaArray_t a, cudaExtent e, const std::vector<float>& v) {
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(const_cast<float*>(v.data()), e.width * sizeof(float), e.width,
                                 e.height ? e.height : 1);
  p.dstArray = a;
  p.extent = make_cudaExtent(e.width, e.height ? e.height : 1, e.depth ? e.depth : 1);
  p.kind = cudaMemcpyHostToDevice;
  CK(cudaMemcpy3D(&p));
}

int array2d() {
  const int w = 256, hgt = 64;
  const cudaExtent e = make_cudaExtent(w, hgt, 0);
  ArrayTex a = make_array_tex(e, 0, tex_desc(cudaFilterModeLinear, true));
  float* out;
  CK(cudaMalloc(&out, w * hgt * sizeof(float)));
  std::vector<float> h(w * hgt);
  for (int it = 0; it < 3; ++it) {
    fill_array(a.array, e, ramp(w * hgt, it + 1.5f));
    texArrayFilter<<<dim3(w / 128, hgt), 128>>>(a.tex, out, w, hgt);
    CK(cudaMemcpy(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    print("array2d", it, h);
  }
  return 0;
}

int layered() {
  const int w = 128, hgt = 32, layers = 4;
  const cudaExtent e = make_cudaExtent(w, hgt, layers);
  ArrayTex a = make_array_tex(e, cudaArrayLayered, tex_desc(cudaFilterModePoint, false));
  float* out;
  CK(cudaMalloc(&out, w * hgt * sizeof(float)));
  std::vector<float> h(w * hgt);
  for (int it = 0; it < 3; ++it) {
    fill_array(a.array, e, ramp(w * hgt * layers, it + 0.5f));
    texLayered<<<dim3(w / 64, hgt), 64>>>(a.tex, out, w, hgt, layers);
    CK(cudaMemcpy(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    print("layered", it, h);
  }
  return 0;
}

int array3d() {
  const int w = 64, hgt = 16, d = 8;
  const cudaExtent e = make_cudaExtent(w, hgt, d);
  ArrayTex a = make_array_tex(e, 0, tex_desc(cudaFilterModeLinear, false));
  float* out;
  CK(cudaMalloc(&out, w * hgt * d * sizeof(float)));
  std::vector<float> h(w * hgt * d);
  for (int it = 0; it < 3; ++it) {
    fill_array(a.array, e, ramp(w * hgt * d, it + 3.0f));
    texVolume<<<dim3(w / 64, hgt, d), 64>>>(a.tex, out, w, hgt, d);
    CK(cudaMemcpy(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    print("array3d", it, h);
  }
  return 0;
}

int mipmap() {
  const int w = 64, hgt = 32, levels = 5;
  cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mip;
  CK(cudaMallocMipmappedArray(&mip, &cd, make_cudaExtent(w, hgt, 0), levels));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeMipmappedArray;
  rd.res.mipmap.mipmap = mip;
  cudaTextureDesc td = tex_desc(cudaFilterModeLinear, true);
  td.mipmapFilterMode = cudaFilterModePoint;
  td.maxMipmapLevelClamp = levels - 1;
  cudaTextureObject_t t;
  CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
  float* out;
  CK(cudaMalloc(&out, w * hgt * sizeof(float)));
  std::vector<float> h(w * hgt);
  for (int it = 0; it < 3; ++it) {
    for (int l = 0; l < levels; ++l) {
      cudaArray_t level;
      CK(cudaGetMipmappedArrayLevel(&level, mip, l));
      const int lw = w >> l, lh = hgt >> l;
      fill_array(level, make_cudaExtent(lw, lh, 0), ramp(lw * lh, it + 1.0f + l));
    }
    texMip<<<dim3(w / 32, hgt), 32>>>(t, out, w, hgt, levels);
    CK(cudaMemcpy(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    print("mipmap", it, h);
  }
  return 0;
}

int surface() {
  const int w = 256, hgt = 40;
  const cudaExtent e = make_cudaExtent(w, hgt, 0);
  cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
  cudaArray_t a;
  CK(cudaMalloc3DArray(&a, &cd, e, cudaArraySurfaceLoadStore));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeArray;
  rd.res.array.array = a;
  cudaSurfaceObject_t s;
  CK(cudaCreateSurfaceObject(&s, &rd));
  fill_array(a, e, ramp(w * hgt, 1.0f));
  std::vector<float> h(w * hgt);
  for (int it = 0; it < 3; ++it) {
    // The array accumulates across launches: BEFORE of launch 1 is launch 0's output.
    surfScale<<<dim3(w / 128, hgt), 128>>>(s, w, hgt, 1.5f + it);
    CK(cudaMemcpy2DFromArray(h.data(), w * sizeof(float), a, 0, 0, w * sizeof(float), hgt, cudaMemcpyDeviceToHost));
    print("surface", it, h);
  }
  return 0;
}

int by_value_struct() {
  const int n = 5000;
  float *in, *out;
  CK(cudaMalloc(&in, n * sizeof(float)));
  CK(cudaMalloc(&out, n * sizeof(float)));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeLinear;
  rd.res.linear.devPtr = in;
  rd.res.linear.desc = cudaCreateChannelDesc<float>();
  rd.res.linear.sizeInBytes = n * sizeof(float);
  cudaTextureDesc td = tex_desc(cudaFilterModePoint, false);
  cudaTextureObject_t decoy, t;
  // A second texture first, so the struct's handle is not the first handle value.
  CK(cudaCreateTextureObject(&decoy, &rd, &td, nullptr));
  CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
  std::vector<float> h(n);
  for (int it = 0; it < 3; ++it) {
    auto v = ramp(n, it + 4.0f);
    CK(cudaMemcpy(in, v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    Sampler s{n, 0.5f + it, t, out, 0.25 * it};
    texStruct<<<(n + 127) / 128, 128>>>(s);
    CK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
    print("struct", it, h);
  }
  return 0;
}

int texsurf() {
  const int w = 128, hgt = 32;
  const cudaExtent e = make_cudaExtent(w, hgt, 0);
  ArrayTex in = make_array_tex(e, 0, tex_desc(cudaFilterModePoint, false));
  cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
  cudaArray_t out;
  CK(cudaMalloc3DArray(&out, &cd, e, cudaArraySurfaceLoadStore));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeArray;
  rd.res.array.array = out;
  cudaSurfaceObject_t s;
  CK(cudaCreateSurfaceObject(&s, &rd));
  std::printf("APP texsurf handles %llu %llu\n", (unsigned long long)in.tex, (unsigned long long)s);
  std::vector<float> h(w * hgt);
  for (int it = 0; it < 3; ++it) {
    fill_array(in.array, e, ramp(w * hgt, it + 1.0f));
    texToSurf<<<dim3(w / 64, hgt), 64>>>(in.tex, s, w, hgt);
    CK(cudaMemcpy2DFromArray(h.data(), w * sizeof(float), out, 0, 0, w * sizeof(float), hgt, cudaMemcpyDeviceToHost));
    print("texsurf", it, h);
  }
  return 0;
}

int alias() {
  const int w = 64, hgt = 64;
  cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mip;
  CK(cudaMallocMipmappedArray(&mip, &cd, make_cudaExtent(w, hgt, 0), 3, cudaArraySurfaceLoadStore));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeMipmappedArray;
  rd.res.mipmap.mipmap = mip;
  cudaTextureDesc td = tex_desc(cudaFilterModeLinear, true);
  cudaTextureObject_t whole;
  CK(cudaCreateTextureObject(&whole, &rd, &td, nullptr));
  cudaArray_t level1;
  CK(cudaGetMipmappedArrayLevel(&level1, mip, 1));
  cudaResourceDesc sd{};
  sd.resType = cudaResourceTypeArray;
  sd.res.array.array = level1;
  // A surface created and destroyed first, so that the surface's handle value differs from
  // the texture's whether the driver numbers them apart or together (this case is about
  // the aliasing, not about a texture and a surface sharing a value).
  cudaSurfaceObject_t dummy, s;
  CK(cudaCreateSurfaceObject(&dummy, &sd));
  CK(cudaCreateSurfaceObject(&s, &sd));
  CK(cudaDestroySurfaceObject(dummy));
  for (int it = 0; it < 2; ++it) mipAlias<<<dim3(1, hgt / 2), w / 2>>>(whole, s, w / 2, hgt / 2);
  CK(cudaDeviceSynchronize());
  std::printf("APP alias done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  int rc = 1;
  if (!std::strcmp(mode, "linear")) rc = linear();
  else if (!std::strcmp(mode, "pitch2d")) rc = pitch2d();
  else if (!std::strcmp(mode, "array2d")) rc = array2d();
  else if (!std::strcmp(mode, "layered")) rc = layered();
  else if (!std::strcmp(mode, "array3d")) rc = array3d();
  else if (!std::strcmp(mode, "mipmap")) rc = mipmap();
  else if (!std::strcmp(mode, "surface")) rc = surface();
  else if (!std::strcmp(mode, "struct")) rc = by_value_struct();
  else if (!std::strcmp(mode, "texsurf")) rc = texsurf();
  else if (!std::strcmp(mode, "alias")) rc = alias();
  else std::fprintf(stderr, "usage: %s linear|pitch2d|array2d|layered|array3d|mipmap|surface|struct|texsurf|alias\n", argv[0]);
  CK(cudaDeviceSynchronize());
  return rc;
}
