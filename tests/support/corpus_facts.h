// Facts about the AITER corpus read with LLVM's own tools while writing the
// tests, so the tests do not compare hipguard against itself.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace hgtest {

// Static LDS (.group_segment_fixed_size) of the single kernel of each corpus
// file, read with `llvm-readelf-16 --notes FILE` while writing this test (the
// kernel descriptors' group_segment_fixed_size, read with a separate script,
// agree). Every corpus file holds exactly one kernel.
inline const std::map<std::string, uint64_t> kCorpusLds = {
    {"gfx1250_fmha_fwd_mxfp8_fmha_fwd_mxfp8_d128.co", 327680},
    {"gfx1250_mla_mla_a8w8_qh16_1tg_16mx2_32nx4_np_3p.co", 327680},
    {"gfx1250_mla_mla_a8w8_qh16_1tg_16mx4_64nx1_np.co", 327680},
    {"gfx1250_mla_mla_a8w8_qh8_1tg_8mx2_32nx4_np_3p.co", 327680},
    {"gfx942_flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32.co", 65536},
    {"gfx942_fmha_v3_bwd_bwd_hd64_bf16_causal_br_a32_rtne_pssk_group.co", 65536},
    {"gfx942_fmha_v3_fwd_MI300_fwd_hd128_bf16_causal_rtne.co", 65536},
    {"gfx942_fmha_v3_fwd_MI308_fwd_hd128_bf16_rtne_group.co", 65536},
    {"gfx942_fmoe_fp8_g1u1_multix_subGU_384.co", 65536},
    {"gfx942_fmoe_gelu_fmoe_bf16_pertokenFp8_g1u1_multix_gelu_1tg_ps_32x320.co", 65536},
    {"gfx942_fmoe_gelu_fmoe_bf16_pertokenInt8_g1u1_gelu_1tg_ps_32x192.co", 65536},
    {"gfx942_fmoe_gelu_fmoe_bf16_pertokenInt8_g1u1_multix_gelu_1tg_ps_32x256.co", 65536},
    {"gfx942_fmoe_gelu_fmoe_fp16_pertokenFp8_g1u1_gelu_1tg_32x448.co", 65536},
    {"gfx942_fmoe_silu_fmoe_bf16_pertokenFp8_g1u1_silu_vs_1tg_32x256.co", 65536},
    {"gfx942_fmoe_silu_fmoe_bf16_pertokenInt8_g1u1_vs_silu_1tg_ps_32x448.co", 65536},
    {"gfx942_fmoe_silu_fmoe_fp16_pertokenInt8_g1u1_multix_silu_1tg_32x320.co", 65536},
    {"gfx942_i8gemm_I8gemm_bf16_perTokenI8_BpreShuffle_112x256.co", 65536},
    {"gfx942_mla_mla_a8w8_qh16_qseqlen4_gqaratio16_ps.co", 65536},
    {"gfx942_pa_a16w8_b16_2tg_g8_i8.co", 32768},
    {"gfx942_pa_a16w8_f16.co", 65536},
    {"gfx942_pa_pa_bf16_pertokenFp8_gqa8_1tg_4w_mtp_msk1.co", 65536},
    {"gfx942_pa_pa_fp16_pertokenFp8_gqa16_1tg_4w_mtp_msk1.co", 65536},
    {"gfx942_topk_per_row_prefill_asm_top_k_per_row_prefill.co", 12688},
    {"gfx950_bf16gemm_bf16gemm_fp32bf16_tn_128x64_bshuffle_splitk.co", 65536},
    {"gfx950_f4gemm_f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256.co", 163840},
    {"gfx950_fmha_v4_fwd_fwd_hd128_f4f4.co", 66048},
    {"gfx950_fmoe_2stages_fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_32x256_2tg_pf3.co", 17408},
    {"gfx950_fmoe_2stages_fmoe_stage1_bf16_pertokenFp8_g1u1_48x256_pf2.co", 65536},
    {"gfx950_fmoe_2stages_fmoe_stage1_bf16_pertokenInt8_g1u1_16x256_2tg_pf3.co", 8704},
    {"gfx950_fmoe_gelu_fmoe_f16_blockscaleFp8_g1u1_vs_gelu_1tg_32x256.co", 163840},
    {"gfx950_fmoe_gelu_fmoe_f16_pertokenMXfp4_g1u1_novs_gelu_2tg_ps_32x256.co", 35840},
    {"gfx950_fmoe_gelu_fmoe_fp16_pertokenInt8_g1u0_vs_gelu_1tg_32x512.co", 163840},
    {"gfx950_fmoe_gelu_fmoe_fp16_pertokenInt8_g1u1_multix_gelu_1tg_32x128.co", 163840},
    {"gfx950_fmoe_silu_fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256.co", 65536},
    {"gfx950_fmoe_silu_fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_32x320.co", 163840},
    {"gfx950_fmoe_silu_fmoe_bf16_pertokenInt8_g1u1_vs_multix_silu_1tg_32x512.co", 163840},
    {"gfx950_fmoe_silu_fmoe_fp16_pertokenFp8_g1u1_silu_1tg_32x320.co", 163840},
    {"gfx950_fmoe_silu_fmoe_fp16_pertokenFp8_g1u1_silu_1tg_32x512.co", 163840},
    {"gfx950_fmoe_silu_fmoe_fp16_pertokenInt8_g1u1_tkw1_silu_1tg_32x256.co", 163840},
    {"gfx950_mla_mla_a8w8_qh32_qseqlen4_gqaratio32_msk0_lse_cprr_ps.co", 163840},
    {"gfx950_mla_mla_pfl_bf16_a16w16_causal_subQ128_mqa128.co", 65536},
    {"gfx950_pa_pa_fp16_pertokenFp8_gqa8_1tg_4w_mtp_msk1.co", 163840},
};

}  // namespace hgtest
