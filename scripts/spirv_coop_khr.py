#!/usr/bin/env python3
"""Rewrites a SPIR-V module that uses VK_NV_cooperative_matrix into VK_KHR_cooperative_matrix's form:
usage spirv_coop_khr.py IN.spv OUT [NAME]: OUT the module, or with NAME a C header holding it as
`const uint32_t NAME[]` (as glslangValidator --vn writes one; cmake/EmbedShaders.cmake embeds it).
The shaders keep one source in NV's form, which Debian 12's glslang compiles (its KHR form needs a
newer one); the KHR form differs only in what this script rewrites. Each NV matrix type gets the
use its values have in the module's products (A, B, or accumulator: the result and C of
OpCooperativeMatrixMulAddNV; f32 types used in no product are accumulators); loads and stores take
a memory layout instead of NV's column-major flag; a product of signed integers names their
signedness; a matrix's length becomes an instruction; the capability, extension and the other NV
instructions become the KHR ones. A type used in two roles, a column-major flag that is no
constant, or a length used outside one function is refused."""
import struct
import sys

CAP, EXT, TYPE_INT, TYPE_FLOAT, CONST, CONST_TRUE, CONST_FALSE, SPEC_OP = 17, 10, 21, 22, 43, 41, 42, 52
NV_CAP, KHR_CAP = 5357, 6022
NV_TYPE, NV_LOAD, NV_STORE, NV_MULADD, NV_LENGTH = 5358, 5359, 5360, 5361, 5362
KHR_TYPE, KHR_LOAD, KHR_STORE, KHR_MULADD, KHR_LENGTH = 4456, 4457, 4458, 4459, 4460
USE_A, USE_B, USE_ACC = 0, 1, 2


def fail(why):
    sys.exit(f"spirv_coop_khr.py: {sys.argv[1]}: {why}")


def string_words(text):
    data = text.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


words = list(struct.unpack(f"<{len(open(sys.argv[1], 'rb').read()) // 4}I", open(sys.argv[1], "rb").read()))
if words[0] != 0x07230203:
    fail("not a SPIR-V module")
header, bound = words[:5], words[3]
instructions = []
at = 5
while at < len(words):
    count, opcode = words[at] >> 16, words[at] & 0xFFFF
    instructions.append([opcode] + words[at + 1:at + count])
    at += count

# Result types of every value (opcodes with a result type have it first, then the result id);
# only what the products and the flags need.
result_type = {}
has_type_and_result = {NV_LOAD, NV_MULADD, NV_LENGTH}
for ins in instructions:
    op = ins[0]
    if op in has_type_and_result or op in (CONST, CONST_TRUE, CONST_FALSE):
        result_type[ins[2]] = ins[1]
# Generic: any instruction of the form (type, result, ...) whose type is a matrix: arithmetic,
# composites, phis, loads of variables. Record every pair; the matrix types filter them below.
matrix_types = {ins[1]: ins for ins in instructions if ins[0] == NV_TYPE}
float_types = {ins[1]: ins[2] for ins in instructions if ins[0] == TYPE_FLOAT}
int_signed = {ins[1]: ins[3] == 1 for ins in instructions if ins[0] == TYPE_INT}
for ins in instructions:
    if len(ins) >= 3 and ins[1] in matrix_types:
        result_type.setdefault(ins[2], ins[1])

use = {}
def assign(type_id, role):
    if type_id not in matrix_types:
        fail(f"product operand %{type_id} of no cooperative matrix type")
    if use.get(type_id, role) != role:
        fail(f"matrix type %{type_id} used both as {use[type_id]} and {role}")
    use[type_id] = role

for ins in instructions:
    if ins[0] == NV_MULADD:
        rtype, _, a, b, c = ins[1:6]
        assign(rtype, USE_ACC)
        assign(result_type.get(a), USE_A)
        assign(result_type.get(b), USE_B)
        assign(result_type.get(c), USE_ACC)
for type_id, ins in matrix_types.items():
    if type_id not in use:
        if float_types.get(ins[2]) == 32:
            use[type_id] = USE_ACC
        else:
            fail(f"matrix type %{type_id} of 16-bit components in no product: its use is unknown")

booleans = {ins[2]: 1 for ins in instructions if ins[0] == CONST_TRUE}
booleans.update({ins[2]: 0 for ins in instructions if ins[0] == CONST_FALSE})

# New constants: a 32-bit unsigned int type (the module's, or a new one) and 0, 1, 2 of it,
# placed right after that type.
uint_type = next((ins[1] for ins in instructions if ins[0] == TYPE_INT and ins[2:] == [32, 0]), None)
new_ids = {}
def fresh():
    global bound
    bound += 1
    return bound - 1
added = []
if uint_type is None:
    uint_type = fresh()
    added.append([TYPE_INT, uint_type, 32, 0])
for value in (0, 1, 2):
    new_ids[value] = fresh()
    added.append([CONST, uint_type, new_ids[value], value])

out = []
for ins in instructions:
    op = ins[0]
    if op == CAP and ins[1] == NV_CAP:
        ins = [CAP, KHR_CAP]
    elif op == EXT and ins[1:] == string_words("SPV_NV_cooperative_matrix"):
        ins = [EXT] + string_words("SPV_KHR_cooperative_matrix")
    elif op == NV_TYPE:
        ins = [KHR_TYPE] + ins[1:6] + [new_ids[use[ins[1]]]]
    elif op == NV_LOAD:
        rtype, result, pointer, stride, column_major = ins[1:6]
        if column_major not in booleans:
            fail("a load's column-major flag is no constant")
        ins = [KHR_LOAD, rtype, result, pointer, new_ids[booleans[column_major]], stride] + ins[6:]
    elif op == NV_STORE:
        pointer, obj, stride, column_major = ins[1:5]
        if column_major not in booleans:
            fail("a store's column-major flag is no constant")
        ins = [KHR_STORE, pointer, obj, new_ids[booleans[column_major]], stride] + ins[5:]
    elif op == NV_MULADD:
        # KHR takes integer components' signedness from the product's operands, not the types.
        rtype, _, a, b, c = ins[1:6]
        roles = [result_type.get(a), result_type.get(b), result_type.get(c), rtype]
        signed = sum(bit for bit, t in zip((1, 2, 4, 8), roles) if int_signed.get(matrix_types[t][2]))
        ins = [KHR_MULADD] + ins[1:] + ([signed] if signed else [])
    elif op == NV_LENGTH:
        ins = [KHR_LENGTH] + ins[1:]
    out.append(ins)
    if op == TYPE_INT and ins[1] == uint_type:
        out.extend(added)
        added = []
if added:  # no unsigned int type in the module: the new one before the first matrix type
    first = next(i for i, ins in enumerate(out) if ins[0] == KHR_TYPE)
    out[first:first] = added

# A matrix's length (m.length()) is a specialization-constant operation in the NV form, with the
# constants computed from it; the KHR form's length is an instruction, as newer glslang emits it.
# They move, in order, to the top of the one function that uses them (after its variables).
FUNCTION, FUNCTION_END, LABEL, VARIABLE = 54, 56, 248, 59
ID_USERS_AT_MODULE = {28, 44, 51, SPEC_OP}  # array types, composites: operands that are ids, not literals
moved, moved_ids = [], set()
for ins in out:
    if ins[0] == SPEC_OP and (ins[3] == NV_LENGTH or any(i in moved_ids for i in ins[4:])):
        moved.append(ins)
        moved_ids.add(ins[2])
if moved:
    users, function, module_users = set(), None, set()
    for ins in out:
        if ins[0] == FUNCTION:
            function = ins[2]
        uses = set(ins[1:]) & moved_ids
        if uses and ins not in moved:
            if function is not None:
                users.add(function)
            elif ins[0] in ID_USERS_AT_MODULE:
                module_users.add(ins[0])
        if ins[0] == FUNCTION_END:
            function = None
    if module_users or len(users) != 1:
        fail(f"a matrix's length used outside one function (module-scope opcodes {sorted(module_users)}, functions {len(users)})")
    out = [ins for ins in out if ins not in moved]
    at = next(i for i, ins in enumerate(out) if ins[0] == FUNCTION and ins[2] in users)
    at = next(i for i in range(at, len(out)) if out[i][0] == LABEL) + 1
    while out[at][0] == VARIABLE:
        at += 1
    out[at:at] = [[KHR_LENGTH if ins[3] == NV_LENGTH else ins[3], ins[1], ins[2]] + ins[4:] for ins in moved]

header[3] = bound
binary = list(header)
for ins in out:
    binary.append((len(ins) << 16) | ins[0])
    binary.extend(ins[1:])
if len(sys.argv) > 3:
    lines = [", ".join(f"0x{w:08x}" for w in binary[i:i + 8]) for i in range(0, len(binary), 8)]
    with open(sys.argv[2], "w") as header_file:
        header_file.write(f"// Generated by scripts/spirv_coop_khr.py from {sys.argv[1]}\n#pragma once\n")
        header_file.write(f"const uint32_t {sys.argv[3]}[] = {{\n    " + ",\n    ".join(lines) + "\n};\n")
else:
    open(sys.argv[2], "wb").write(struct.pack(f"<{len(binary)}I", *binary))
