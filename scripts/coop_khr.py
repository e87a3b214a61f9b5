#!/usr/bin/env python3
"""Rewrites a shader source written with VK_NV_cooperative_matrix's types and calls into
VK_KHR_cooperative_matrix's form (whose matrices carry their use), for the build's optional KHR
kernels (GPTOSS_GLSLANG_KHR): usage coop_khr.py IN OUT. The rules are the names of coop_tile.glsl's
matrices: f32 lM x lN are accumulators, f16 lM x lK A operands, f16 lK x lN B operands; a load's
last argument (column-major or not) becomes the KHR layout. Anything else in NV's form is an error."""
import re
import sys

source = open(sys.argv[1]).read()
rules = [
    (r"#extension GL_NV_cooperative_matrix : require", "#extension GL_KHR_cooperative_matrix : require"),
    (r"fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>", "coopmat<float, gl_ScopeSubgroup, lM, lN, gl_MatrixUseAccumulator>"),
    (r"fcoopmatNV<16, gl_ScopeSubgroup, lM, lK>", "coopmat<float16_t, gl_ScopeSubgroup, lM, lK, gl_MatrixUseA>"),
    (r"fcoopmatNV<16, gl_ScopeSubgroup, lK, lN>", "coopmat<float16_t, gl_ScopeSubgroup, lK, lN, gl_MatrixUseB>"),
    (r"coopMatMulAddNV\(", "coopMatMulAdd("),
]
for pattern, replacement in rules:
    source = re.sub(pattern, replacement, source)


def layout(match):
    name, args, column_major = match.group(1), match.group(2), match.group(3)
    khr = "gl_CooperativeMatrixLayoutColumnMajor" if column_major == "true" else "gl_CooperativeMatrixLayoutRowMajor"
    return f"coopMat{name}({args}, {khr})"


source = re.sub(r"coopMat(Load|Store)NV\(((?:[^()]|\([^()]*\))*?),\s*(true|false)\)", layout, source, flags=re.S)
left = re.findall(r"\w*NV\b|\w*NV\(|fcoopmatNV", source)
if left:
    sys.exit(f"coop_khr.py: {sys.argv[1]}: no KHR form for {sorted(set(left))}")
open(sys.argv[2], "w").write(source)
