// Every fusion decision (and non-decision) of --kiln-form-kernels.
// RUN: kiln-opt %s -split-input-file --kiln-form-kernels | FileCheck %s

// A chain of pointwise ops with a broadcast bias becomes one kernel; the splat
// constant is copied in rather than passed.
// CHECK-LABEL: func.func @pointwise_chain
// CHECK: %[[K:.*]] = kiln.kernel "pointwise"(%arg0, %arg1)
// CHECK: kiln.constant dense<5.000000e-01>
// CHECK: kiln.add
// CHECK: kiln.mul
// CHECK: kiln.tanh
// CHECK: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]
func.func @pointwise_chain(%x: tensor<?x8xf32, #kiln.dims<[n, 8]>>, %b: tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>> {
  %h = kiln.constant dense<0.5> : tensor<f32>
  %s = kiln.add %x, %b : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %m = kiln.mul %s, %h : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<f32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %t = kiln.tanh %m : (tensor<?x8xf32, #kiln.dims<[n, 8]>>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  return %t : tensor<?x8xf32, #kiln.dims<[n, 8]>>
}

// -----

// A producer with users in two kernels is materialized once by its own kernel,
// not recomputed in both.
// CHECK-LABEL: func.func @multi_consumer
// CHECK: %[[E:.*]] = kiln.kernel "pointwise"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK: kiln.kernel "pointwise"(%[[E]])
// CHECK: kiln.kernel "pointwise"(%[[E]])
func.func @multi_consumer(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = kiln.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %a = kiln.sin %e : (tensor<4xf32>) -> tensor<4xf32>
  %b = kiln.cos %e : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// A reduction takes its pointwise prologue; its pointwise consumer is a kernel
// of its own (inlining the reduction into it would recompute it per element).
// CHECK-LABEL: func.func @reduction_prologue
// CHECK: %[[R:.*]] = kiln.kernel "reduction"(%arg0)
// CHECK: kiln.mul
// CHECK: kiln.reduce
// CHECK: kiln.kernel "pointwise"(%[[R]])
// CHECK: kiln.sqrt
func.func @reduction_prologue(%x: tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>> {
  %sq = kiln.mul %x, %x : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %s = kiln.reduce %sq {kind = #kiln<reduce sum>, axes = array<i64: 1>} : (tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %r = kiln.sqrt %s : (tensor<?x1xf32, #kiln.dims<[n, 1]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  return %r : tensor<?x1xf32, #kiln.dims<[n, 1]>>
}

// -----

// softmax and layer_norm are row kernels with their prologues; matmul stays a
// library op between kernels.
// CHECK-LABEL: func.func @library_between_rows
// CHECK: kiln.kernel "row"
// CHECK: kiln.div
// CHECK: kiln.softmax
// CHECK: kiln.matmul
// CHECK: kiln.kernel "row"
// CHECK: kiln.add
// CHECK: kiln.layer_norm
func.func @library_between_rows(%q: tensor<2x4x4xf32>, %v: tensor<2x4x8xf32>, %g: tensor<8xf32>, %res: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %c = kiln.constant dense<2.0> : tensor<f32>
  %s = kiln.div %q, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %a = kiln.add %o, %res : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n = kiln.layer_norm %a, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// Data movement with known shape operands fuses; its shape constants are copied.
// CHECK-LABEL: func.func @data_movement
// CHECK: kiln.kernel "pointwise"(%arg0)
// CHECK: kiln.constant dense<[4, 2]>
// CHECK: kiln.transpose
// CHECK: kiln.reshape
// CHECK-NOT: kiln.kernel
func.func @data_movement(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {
  %t = kiln.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %s = kiln.constant dense<[4, 2]> : tensor<2xi64>
  %r = kiln.reshape %t, %s : (tensor<4x2xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// Element types codegen lacks (float8 E8M0, a scale type) and dims nothing is
// known about stay outside kernels.
// CHECK-LABEL: func.func @not_fusible
// CHECK-NOT: kiln.kernel
// CHECK: kiln.cast
// CHECK: kiln.exp
func.func @not_fusible(%x: tensor<4xf32>, %y: tensor<?xf32>) -> (tensor<4xf8E8M0FNU>, tensor<?xf32>) {
  %c = kiln.cast %x to f8E8M0FNU : (tensor<4xf32>) -> tensor<4xf8E8M0FNU>
  %e = kiln.exp %y : (tensor<?xf32>) -> tensor<?xf32>
  return %c, %e : tensor<4xf8E8M0FNU>, tensor<?xf32>
}

// -----

// A large splat read by a library op or returned is filled by a kernel of its
// own, not stored as a weight; a small one, and a shape operand, stay constants.
// CHECK-LABEL: func.func @large_splat
// CHECK: %[[FILL:.*]] = kiln.kernel "pointwise"() : () -> tensor<1024x4xf32> {
// CHECK-NEXT: kiln.constant dense<1.000000e+00> : tensor<1024x4xf32>
// CHECK-NEXT: kiln.yield
// CHECK: %[[SMALL:.*]] = kiln.constant dense<2.000000e+00> : tensor<4x4xf32>
// CHECK: kiln.matmul %[[FILL]], %[[SMALL]]
// CHECK: return {{.*}}, %[[FILL]]
func.func @large_splat() -> (tensor<1024x4xf32>, tensor<1024x4xf32>) {
  %big = kiln.constant dense<1.0> : tensor<1024x4xf32>
  %small = kiln.constant dense<2.0> : tensor<4x4xf32>
  %m = kiln.matmul %big, %small : (tensor<1024x4xf32>, tensor<4x4xf32>) -> tensor<1024x4xf32>
  return %m, %big : tensor<1024x4xf32>, tensor<1024x4xf32>
}

// -----

// A chain longer than 128 ops is cut into kernels of at most 128 ops deep, so
// codegen's expression walk stays shallow.
// CHECK-LABEL: func.func @deep_chain
// CHECK-COUNT-2: kiln.kernel "pointwise"
// CHECK-NOT: kiln.kernel
// CHECK: return
func.func @deep_chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %v0 = kiln.neg %x : (tensor<8xf32>) -> tensor<8xf32>
  %v1 = kiln.exp %v0 : (tensor<8xf32>) -> tensor<8xf32>
  %v2 = kiln.neg %v1 : (tensor<8xf32>) -> tensor<8xf32>
  %v3 = kiln.exp %v2 : (tensor<8xf32>) -> tensor<8xf32>
  %v4 = kiln.neg %v3 : (tensor<8xf32>) -> tensor<8xf32>
  %v5 = kiln.exp %v4 : (tensor<8xf32>) -> tensor<8xf32>
  %v6 = kiln.neg %v5 : (tensor<8xf32>) -> tensor<8xf32>
  %v7 = kiln.exp %v6 : (tensor<8xf32>) -> tensor<8xf32>
  %v8 = kiln.neg %v7 : (tensor<8xf32>) -> tensor<8xf32>
  %v9 = kiln.exp %v8 : (tensor<8xf32>) -> tensor<8xf32>
  %v10 = kiln.neg %v9 : (tensor<8xf32>) -> tensor<8xf32>
  %v11 = kiln.exp %v10 : (tensor<8xf32>) -> tensor<8xf32>
  %v12 = kiln.neg %v11 : (tensor<8xf32>) -> tensor<8xf32>
  %v13 = kiln.exp %v12 : (tensor<8xf32>) -> tensor<8xf32>
  %v14 = kiln.neg %v13 : (tensor<8xf32>) -> tensor<8xf32>
  %v15 = kiln.exp %v14 : (tensor<8xf32>) -> tensor<8xf32>
  %v16 = kiln.neg %v15 : (tensor<8xf32>) -> tensor<8xf32>
  %v17 = kiln.exp %v16 : (tensor<8xf32>) -> tensor<8xf32>
  %v18 = kiln.neg %v17 : (tensor<8xf32>) -> tensor<8xf32>
  %v19 = kiln.exp %v18 : (tensor<8xf32>) -> tensor<8xf32>
  %v20 = kiln.neg %v19 : (tensor<8xf32>) -> tensor<8xf32>
  %v21 = kiln.exp %v20 : (tensor<8xf32>) -> tensor<8xf32>
  %v22 = kiln.neg %v21 : (tensor<8xf32>) -> tensor<8xf32>
  %v23 = kiln.exp %v22 : (tensor<8xf32>) -> tensor<8xf32>
  %v24 = kiln.neg %v23 : (tensor<8xf32>) -> tensor<8xf32>
  %v25 = kiln.exp %v24 : (tensor<8xf32>) -> tensor<8xf32>
  %v26 = kiln.neg %v25 : (tensor<8xf32>) -> tensor<8xf32>
  %v27 = kiln.exp %v26 : (tensor<8xf32>) -> tensor<8xf32>
  %v28 = kiln.neg %v27 : (tensor<8xf32>) -> tensor<8xf32>
  %v29 = kiln.exp %v28 : (tensor<8xf32>) -> tensor<8xf32>
  %v30 = kiln.neg %v29 : (tensor<8xf32>) -> tensor<8xf32>
  %v31 = kiln.exp %v30 : (tensor<8xf32>) -> tensor<8xf32>
  %v32 = kiln.neg %v31 : (tensor<8xf32>) -> tensor<8xf32>
  %v33 = kiln.exp %v32 : (tensor<8xf32>) -> tensor<8xf32>
  %v34 = kiln.neg %v33 : (tensor<8xf32>) -> tensor<8xf32>
  %v35 = kiln.exp %v34 : (tensor<8xf32>) -> tensor<8xf32>
  %v36 = kiln.neg %v35 : (tensor<8xf32>) -> tensor<8xf32>
  %v37 = kiln.exp %v36 : (tensor<8xf32>) -> tensor<8xf32>
  %v38 = kiln.neg %v37 : (tensor<8xf32>) -> tensor<8xf32>
  %v39 = kiln.exp %v38 : (tensor<8xf32>) -> tensor<8xf32>
  %v40 = kiln.neg %v39 : (tensor<8xf32>) -> tensor<8xf32>
  %v41 = kiln.exp %v40 : (tensor<8xf32>) -> tensor<8xf32>
  %v42 = kiln.neg %v41 : (tensor<8xf32>) -> tensor<8xf32>
  %v43 = kiln.exp %v42 : (tensor<8xf32>) -> tensor<8xf32>
  %v44 = kiln.neg %v43 : (tensor<8xf32>) -> tensor<8xf32>
  %v45 = kiln.exp %v44 : (tensor<8xf32>) -> tensor<8xf32>
  %v46 = kiln.neg %v45 : (tensor<8xf32>) -> tensor<8xf32>
  %v47 = kiln.exp %v46 : (tensor<8xf32>) -> tensor<8xf32>
  %v48 = kiln.neg %v47 : (tensor<8xf32>) -> tensor<8xf32>
  %v49 = kiln.exp %v48 : (tensor<8xf32>) -> tensor<8xf32>
  %v50 = kiln.neg %v49 : (tensor<8xf32>) -> tensor<8xf32>
  %v51 = kiln.exp %v50 : (tensor<8xf32>) -> tensor<8xf32>
  %v52 = kiln.neg %v51 : (tensor<8xf32>) -> tensor<8xf32>
  %v53 = kiln.exp %v52 : (tensor<8xf32>) -> tensor<8xf32>
  %v54 = kiln.neg %v53 : (tensor<8xf32>) -> tensor<8xf32>
  %v55 = kiln.exp %v54 : (tensor<8xf32>) -> tensor<8xf32>
  %v56 = kiln.neg %v55 : (tensor<8xf32>) -> tensor<8xf32>
  %v57 = kiln.exp %v56 : (tensor<8xf32>) -> tensor<8xf32>
  %v58 = kiln.neg %v57 : (tensor<8xf32>) -> tensor<8xf32>
  %v59 = kiln.exp %v58 : (tensor<8xf32>) -> tensor<8xf32>
  %v60 = kiln.neg %v59 : (tensor<8xf32>) -> tensor<8xf32>
  %v61 = kiln.exp %v60 : (tensor<8xf32>) -> tensor<8xf32>
  %v62 = kiln.neg %v61 : (tensor<8xf32>) -> tensor<8xf32>
  %v63 = kiln.exp %v62 : (tensor<8xf32>) -> tensor<8xf32>
  %v64 = kiln.neg %v63 : (tensor<8xf32>) -> tensor<8xf32>
  %v65 = kiln.exp %v64 : (tensor<8xf32>) -> tensor<8xf32>
  %v66 = kiln.neg %v65 : (tensor<8xf32>) -> tensor<8xf32>
  %v67 = kiln.exp %v66 : (tensor<8xf32>) -> tensor<8xf32>
  %v68 = kiln.neg %v67 : (tensor<8xf32>) -> tensor<8xf32>
  %v69 = kiln.exp %v68 : (tensor<8xf32>) -> tensor<8xf32>
  %v70 = kiln.neg %v69 : (tensor<8xf32>) -> tensor<8xf32>
  %v71 = kiln.exp %v70 : (tensor<8xf32>) -> tensor<8xf32>
  %v72 = kiln.neg %v71 : (tensor<8xf32>) -> tensor<8xf32>
  %v73 = kiln.exp %v72 : (tensor<8xf32>) -> tensor<8xf32>
  %v74 = kiln.neg %v73 : (tensor<8xf32>) -> tensor<8xf32>
  %v75 = kiln.exp %v74 : (tensor<8xf32>) -> tensor<8xf32>
  %v76 = kiln.neg %v75 : (tensor<8xf32>) -> tensor<8xf32>
  %v77 = kiln.exp %v76 : (tensor<8xf32>) -> tensor<8xf32>
  %v78 = kiln.neg %v77 : (tensor<8xf32>) -> tensor<8xf32>
  %v79 = kiln.exp %v78 : (tensor<8xf32>) -> tensor<8xf32>
  %v80 = kiln.neg %v79 : (tensor<8xf32>) -> tensor<8xf32>
  %v81 = kiln.exp %v80 : (tensor<8xf32>) -> tensor<8xf32>
  %v82 = kiln.neg %v81 : (tensor<8xf32>) -> tensor<8xf32>
  %v83 = kiln.exp %v82 : (tensor<8xf32>) -> tensor<8xf32>
  %v84 = kiln.neg %v83 : (tensor<8xf32>) -> tensor<8xf32>
  %v85 = kiln.exp %v84 : (tensor<8xf32>) -> tensor<8xf32>
  %v86 = kiln.neg %v85 : (tensor<8xf32>) -> tensor<8xf32>
  %v87 = kiln.exp %v86 : (tensor<8xf32>) -> tensor<8xf32>
  %v88 = kiln.neg %v87 : (tensor<8xf32>) -> tensor<8xf32>
  %v89 = kiln.exp %v88 : (tensor<8xf32>) -> tensor<8xf32>
  %v90 = kiln.neg %v89 : (tensor<8xf32>) -> tensor<8xf32>
  %v91 = kiln.exp %v90 : (tensor<8xf32>) -> tensor<8xf32>
  %v92 = kiln.neg %v91 : (tensor<8xf32>) -> tensor<8xf32>
  %v93 = kiln.exp %v92 : (tensor<8xf32>) -> tensor<8xf32>
  %v94 = kiln.neg %v93 : (tensor<8xf32>) -> tensor<8xf32>
  %v95 = kiln.exp %v94 : (tensor<8xf32>) -> tensor<8xf32>
  %v96 = kiln.neg %v95 : (tensor<8xf32>) -> tensor<8xf32>
  %v97 = kiln.exp %v96 : (tensor<8xf32>) -> tensor<8xf32>
  %v98 = kiln.neg %v97 : (tensor<8xf32>) -> tensor<8xf32>
  %v99 = kiln.exp %v98 : (tensor<8xf32>) -> tensor<8xf32>
  %v100 = kiln.neg %v99 : (tensor<8xf32>) -> tensor<8xf32>
  %v101 = kiln.exp %v100 : (tensor<8xf32>) -> tensor<8xf32>
  %v102 = kiln.neg %v101 : (tensor<8xf32>) -> tensor<8xf32>
  %v103 = kiln.exp %v102 : (tensor<8xf32>) -> tensor<8xf32>
  %v104 = kiln.neg %v103 : (tensor<8xf32>) -> tensor<8xf32>
  %v105 = kiln.exp %v104 : (tensor<8xf32>) -> tensor<8xf32>
  %v106 = kiln.neg %v105 : (tensor<8xf32>) -> tensor<8xf32>
  %v107 = kiln.exp %v106 : (tensor<8xf32>) -> tensor<8xf32>
  %v108 = kiln.neg %v107 : (tensor<8xf32>) -> tensor<8xf32>
  %v109 = kiln.exp %v108 : (tensor<8xf32>) -> tensor<8xf32>
  %v110 = kiln.neg %v109 : (tensor<8xf32>) -> tensor<8xf32>
  %v111 = kiln.exp %v110 : (tensor<8xf32>) -> tensor<8xf32>
  %v112 = kiln.neg %v111 : (tensor<8xf32>) -> tensor<8xf32>
  %v113 = kiln.exp %v112 : (tensor<8xf32>) -> tensor<8xf32>
  %v114 = kiln.neg %v113 : (tensor<8xf32>) -> tensor<8xf32>
  %v115 = kiln.exp %v114 : (tensor<8xf32>) -> tensor<8xf32>
  %v116 = kiln.neg %v115 : (tensor<8xf32>) -> tensor<8xf32>
  %v117 = kiln.exp %v116 : (tensor<8xf32>) -> tensor<8xf32>
  %v118 = kiln.neg %v117 : (tensor<8xf32>) -> tensor<8xf32>
  %v119 = kiln.exp %v118 : (tensor<8xf32>) -> tensor<8xf32>
  %v120 = kiln.neg %v119 : (tensor<8xf32>) -> tensor<8xf32>
  %v121 = kiln.exp %v120 : (tensor<8xf32>) -> tensor<8xf32>
  %v122 = kiln.neg %v121 : (tensor<8xf32>) -> tensor<8xf32>
  %v123 = kiln.exp %v122 : (tensor<8xf32>) -> tensor<8xf32>
  %v124 = kiln.neg %v123 : (tensor<8xf32>) -> tensor<8xf32>
  %v125 = kiln.exp %v124 : (tensor<8xf32>) -> tensor<8xf32>
  %v126 = kiln.neg %v125 : (tensor<8xf32>) -> tensor<8xf32>
  %v127 = kiln.exp %v126 : (tensor<8xf32>) -> tensor<8xf32>
  %v128 = kiln.neg %v127 : (tensor<8xf32>) -> tensor<8xf32>
  %v129 = kiln.exp %v128 : (tensor<8xf32>) -> tensor<8xf32>
  %v130 = kiln.neg %v129 : (tensor<8xf32>) -> tensor<8xf32>
  %v131 = kiln.exp %v130 : (tensor<8xf32>) -> tensor<8xf32>
  %v132 = kiln.neg %v131 : (tensor<8xf32>) -> tensor<8xf32>
  %v133 = kiln.exp %v132 : (tensor<8xf32>) -> tensor<8xf32>
  %v134 = kiln.neg %v133 : (tensor<8xf32>) -> tensor<8xf32>
  %v135 = kiln.exp %v134 : (tensor<8xf32>) -> tensor<8xf32>
  %v136 = kiln.neg %v135 : (tensor<8xf32>) -> tensor<8xf32>
  %v137 = kiln.exp %v136 : (tensor<8xf32>) -> tensor<8xf32>
  %v138 = kiln.neg %v137 : (tensor<8xf32>) -> tensor<8xf32>
  %v139 = kiln.exp %v138 : (tensor<8xf32>) -> tensor<8xf32>
  %v140 = kiln.neg %v139 : (tensor<8xf32>) -> tensor<8xf32>
  %v141 = kiln.exp %v140 : (tensor<8xf32>) -> tensor<8xf32>
  %v142 = kiln.neg %v141 : (tensor<8xf32>) -> tensor<8xf32>
  %v143 = kiln.exp %v142 : (tensor<8xf32>) -> tensor<8xf32>
  %v144 = kiln.neg %v143 : (tensor<8xf32>) -> tensor<8xf32>
  %v145 = kiln.exp %v144 : (tensor<8xf32>) -> tensor<8xf32>
  %v146 = kiln.neg %v145 : (tensor<8xf32>) -> tensor<8xf32>
  %v147 = kiln.exp %v146 : (tensor<8xf32>) -> tensor<8xf32>
  %v148 = kiln.neg %v147 : (tensor<8xf32>) -> tensor<8xf32>
  %v149 = kiln.exp %v148 : (tensor<8xf32>) -> tensor<8xf32>
  %v150 = kiln.neg %v149 : (tensor<8xf32>) -> tensor<8xf32>
  %v151 = kiln.exp %v150 : (tensor<8xf32>) -> tensor<8xf32>
  %v152 = kiln.neg %v151 : (tensor<8xf32>) -> tensor<8xf32>
  %v153 = kiln.exp %v152 : (tensor<8xf32>) -> tensor<8xf32>
  %v154 = kiln.neg %v153 : (tensor<8xf32>) -> tensor<8xf32>
  %v155 = kiln.exp %v154 : (tensor<8xf32>) -> tensor<8xf32>
  %v156 = kiln.neg %v155 : (tensor<8xf32>) -> tensor<8xf32>
  %v157 = kiln.exp %v156 : (tensor<8xf32>) -> tensor<8xf32>
  %v158 = kiln.neg %v157 : (tensor<8xf32>) -> tensor<8xf32>
  %v159 = kiln.exp %v158 : (tensor<8xf32>) -> tensor<8xf32>
  %v160 = kiln.neg %v159 : (tensor<8xf32>) -> tensor<8xf32>
  %v161 = kiln.exp %v160 : (tensor<8xf32>) -> tensor<8xf32>
  %v162 = kiln.neg %v161 : (tensor<8xf32>) -> tensor<8xf32>
  %v163 = kiln.exp %v162 : (tensor<8xf32>) -> tensor<8xf32>
  %v164 = kiln.neg %v163 : (tensor<8xf32>) -> tensor<8xf32>
  %v165 = kiln.exp %v164 : (tensor<8xf32>) -> tensor<8xf32>
  %v166 = kiln.neg %v165 : (tensor<8xf32>) -> tensor<8xf32>
  %v167 = kiln.exp %v166 : (tensor<8xf32>) -> tensor<8xf32>
  %v168 = kiln.neg %v167 : (tensor<8xf32>) -> tensor<8xf32>
  %v169 = kiln.exp %v168 : (tensor<8xf32>) -> tensor<8xf32>
  %v170 = kiln.neg %v169 : (tensor<8xf32>) -> tensor<8xf32>
  %v171 = kiln.exp %v170 : (tensor<8xf32>) -> tensor<8xf32>
  %v172 = kiln.neg %v171 : (tensor<8xf32>) -> tensor<8xf32>
  %v173 = kiln.exp %v172 : (tensor<8xf32>) -> tensor<8xf32>
  %v174 = kiln.neg %v173 : (tensor<8xf32>) -> tensor<8xf32>
  %v175 = kiln.exp %v174 : (tensor<8xf32>) -> tensor<8xf32>
  %v176 = kiln.neg %v175 : (tensor<8xf32>) -> tensor<8xf32>
  %v177 = kiln.exp %v176 : (tensor<8xf32>) -> tensor<8xf32>
  %v178 = kiln.neg %v177 : (tensor<8xf32>) -> tensor<8xf32>
  %v179 = kiln.exp %v178 : (tensor<8xf32>) -> tensor<8xf32>
  %v180 = kiln.neg %v179 : (tensor<8xf32>) -> tensor<8xf32>
  %v181 = kiln.exp %v180 : (tensor<8xf32>) -> tensor<8xf32>
  %v182 = kiln.neg %v181 : (tensor<8xf32>) -> tensor<8xf32>
  %v183 = kiln.exp %v182 : (tensor<8xf32>) -> tensor<8xf32>
  %v184 = kiln.neg %v183 : (tensor<8xf32>) -> tensor<8xf32>
  %v185 = kiln.exp %v184 : (tensor<8xf32>) -> tensor<8xf32>
  %v186 = kiln.neg %v185 : (tensor<8xf32>) -> tensor<8xf32>
  %v187 = kiln.exp %v186 : (tensor<8xf32>) -> tensor<8xf32>
  %v188 = kiln.neg %v187 : (tensor<8xf32>) -> tensor<8xf32>
  %v189 = kiln.exp %v188 : (tensor<8xf32>) -> tensor<8xf32>
  %v190 = kiln.neg %v189 : (tensor<8xf32>) -> tensor<8xf32>
  %v191 = kiln.exp %v190 : (tensor<8xf32>) -> tensor<8xf32>
  %v192 = kiln.neg %v191 : (tensor<8xf32>) -> tensor<8xf32>
  %v193 = kiln.exp %v192 : (tensor<8xf32>) -> tensor<8xf32>
  %v194 = kiln.neg %v193 : (tensor<8xf32>) -> tensor<8xf32>
  %v195 = kiln.exp %v194 : (tensor<8xf32>) -> tensor<8xf32>
  %v196 = kiln.neg %v195 : (tensor<8xf32>) -> tensor<8xf32>
  %v197 = kiln.exp %v196 : (tensor<8xf32>) -> tensor<8xf32>
  %v198 = kiln.neg %v197 : (tensor<8xf32>) -> tensor<8xf32>
  %v199 = kiln.exp %v198 : (tensor<8xf32>) -> tensor<8xf32>
  return %v199 : tensor<8xf32>
}

// -----

// Pools cuDNN takes (max/average, no dilation, symmetric pads) stay library
// steps; a dilated max pool, an Lp pool and an average pool with asymmetric
// pads are generated kernels (reading the ReLU, which the library pool needs
// materialized).
// CHECK-LABEL: func.func @pools
// CHECK: %[[R:.*]] = kiln.kernel "pointwise"(%arg0)
// CHECK: kiln.pool %[[R]] {{{.*}}kind = #kiln<pool max>, pads = array<i64: 1, 1, 1, 1>
// CHECK: kiln.kernel "pointwise"(%[[R]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.pool {{.*}}dilations = array<i64: 2, 2>
// CHECK: kiln.kernel "pointwise"(%[[R]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.pool {{.*}}kind = #kiln<pool lp>
// CHECK: kiln.kernel "pointwise"(%[[R]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.pool {{.*}}kind = #kiln<pool avg>, pads = array<i64: 0, 0, 1, 1>
func.func @pools(%x: tensor<1x2x8x8xf32>) -> (tensor<1x2x8x8xf32>, tensor<1x2x6x6xf32>, tensor<1x2x7x7xf32>, tensor<1x2x8x8xf32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %r = kiln.max %x, %zero : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %p = kiln.pool %r {kind = #kiln<pool max>, kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %d = kiln.pool %r {kind = #kiln<pool max>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x6x6xf32>
  %l = kiln.pool %r {kind = #kiln<pool lp>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, p = 3 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x7x7xf32>
  %a = kiln.pool %r {kind = #kiln<pool avg>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %p, %d, %l, %a : tensor<1x2x8x8xf32>, tensor<1x2x6x6xf32>, tensor<1x2x7x7xf32>, tensor<1x2x8x8xf32>
}

// -----

// A generated pool fuses with what only it reads (the ReLU before it) and
// what reads it (the scale after), one kernel; a ceil_mode max pool whose
// static dims show cuDNN's floor gives the same result stays in cuDNN.
// CHECK-LABEL: func.func @pool_fusion
// CHECK: kiln.kernel "pointwise"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK: kiln.max
// CHECK-NEXT: kiln.pool {{.*}}ceil_mode = true{{.*}}dilations = array<i64: 2, 2>
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.yield
// CHECK: kiln.pool %arg0 {ceil_mode = true
func.func @pool_fusion(%x: tensor<1x2x8x8xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %r = kiln.max %x, %zero : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %d = kiln.pool %r {kind = #kiln<pool max>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  %s = kiln.mul %d, %two : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %c = kiln.pool %x {kind = #kiln<pool max>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  return %s, %c : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// Ops that ran on the host between kernels are kernels now: a resize fuses
// with the scale after it; a scatter_elements and a gather_nd with index tuples
// of a known length are pointwise (each result element finds its updates or
// reads its tuple); a cumulative roots a reduction kernel (one thread per line)
// with its producer inside.
// CHECK-LABEL: func.func @former_graph_breaks
// CHECK: kiln.kernel "pointwise"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK: kiln.resize
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.yield
// CHECK: kiln.kernel "reduction"(%arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.cumulative
// CHECK: kiln.kernel "pointwise"(%arg1, %arg2, %arg3)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.scatter_elements
// CHECK: kiln.kernel "pointwise"(%arg4, %arg5)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.gather_nd
func.func @former_graph_breaks(%x: tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>, %seq: tensor<?x8xf32, #kiln.dims<[b, 8]>>,
                               %idx: tensor<?x2xi64, #kiln.dims<[b, 2]>>, %upd: tensor<?x2xf32, #kiln.dims<[b, 2]>>,
                               %cache: tensor<?x6x4xf32, #kiln.dims<[b, 6, 4]>>, %pick: tensor<?x3x1xi64, #kiln.dims<[b, 3, 1]>>)
    -> (tensor<1x3x?x?xf32, #kiln.dims<[1, 3, 2 * h, 2 * w]>>, tensor<?x8xf32, #kiln.dims<[b, 8]>>, tensor<?x8xf32, #kiln.dims<[b, 8]>>,
        tensor<?x3x4xf32, #kiln.dims<[b, 3, 4]>>) {
  %size = kiln.symbolic_constant [1, 3, 2 * h, 2 * w] : tensor<4xi64>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %r = kiln.resize %x, %size {mode = #kiln<resize_mode linear>, coordinate_mode = #kiln<coordinate_mode half_pixel>, nearest_mode = #kiln<nearest_mode round_prefer_floor>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, roi = array<f32>} : (tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>, tensor<4xi64>) -> tensor<1x3x?x?xf32, #kiln.dims<[1, 3, 2 * h, 2 * w]>>
  %s = kiln.mul %r, %two : (tensor<1x3x?x?xf32, #kiln.dims<[1, 3, 2 * h, 2 * w]>>, tensor<f32>) -> tensor<1x3x?x?xf32, #kiln.dims<[1, 3, 2 * h, 2 * w]>>
  %e = kiln.exp %seq : (tensor<?x8xf32, #kiln.dims<[b, 8]>>) -> tensor<?x8xf32, #kiln.dims<[b, 8]>>
  %c = kiln.cumulative %e {kind = #kiln<cumulative sum>, axis = 1 : i64} : (tensor<?x8xf32, #kiln.dims<[b, 8]>>) -> tensor<?x8xf32, #kiln.dims<[b, 8]>>
  %sc = kiln.scatter_elements %seq, %idx, %upd {axis = 1 : i64, reduction = #kiln<scatter add>} : (tensor<?x8xf32, #kiln.dims<[b, 8]>>, tensor<?x2xi64, #kiln.dims<[b, 2]>>, tensor<?x2xf32, #kiln.dims<[b, 2]>>) -> tensor<?x8xf32, #kiln.dims<[b, 8]>>
  %g = kiln.gather_nd %cache, %pick {batch_dims = 1 : i64} : (tensor<?x6x4xf32, #kiln.dims<[b, 6, 4]>>, tensor<?x3x1xi64, #kiln.dims<[b, 3, 1]>>) -> tensor<?x3x4xf32, #kiln.dims<[b, 3, 4]>>
  return %s, %c, %sc, %g : tensor<1x3x?x?xf32, #kiln.dims<[1, 3, 2 * h, 2 * w]>>, tensor<?x8xf32, #kiln.dims<[b, 8]>>, tensor<?x8xf32, #kiln.dims<[b, 8]>>, tensor<?x3x4xf32, #kiln.dims<[b, 3, 4]>>
}

// -----

// A top_k with a constant k: a reduction kernel computes its indices (its
// input materialized, not fused: each element is read once per element of its
// line) and its values are a gather of them, fused with what reads them.
// CHECK-LABEL: func.func @top_k
// CHECK: %[[E:.*]] = kiln.kernel "pointwise"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK: %[[I:.*]] = kiln.kernel "reduction"(%[[E]])
// CHECK: %{{.*}}, %[[AT:.*]] = kiln.top_k
// CHECK-NEXT: kiln.yield %[[AT]]
// CHECK: %[[V:.*]] = kiln.kernel "pointwise"(%[[E]], %[[I]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.gather_elements
// CHECK-NEXT: kiln.neg
// CHECK: return %[[V]], %[[I]]
func.func @top_k(%x: tensor<?x50xf32, #kiln.dims<[n, 50]>>) -> (tensor<?x5xf32, #kiln.dims<[n, 5]>>, tensor<?x5xi64, #kiln.dims<[n, 5]>>) {
  %k = kiln.constant dense<5> : tensor<1xi64>
  %e = kiln.exp %x : (tensor<?x50xf32, #kiln.dims<[n, 50]>>) -> tensor<?x50xf32, #kiln.dims<[n, 50]>>
  %v, %i = kiln.top_k %e, %k {axis = 1 : i64} : (tensor<?x50xf32, #kiln.dims<[n, 50]>>, tensor<1xi64>) -> (tensor<?x5xf32, #kiln.dims<[n, 5]>>, tensor<?x5xi64, #kiln.dims<[n, 5]>>)
  %m = kiln.neg %v : (tensor<?x5xf32, #kiln.dims<[n, 5]>>) -> tensor<?x5xf32, #kiln.dims<[n, 5]>>
  return %m, %i : tensor<?x5xf32, #kiln.dims<[n, 5]>>, tensor<?x5xi64, #kiln.dims<[n, 5]>>
}

// -----

// A det of small known matrices is a kernel (elimination in a thread's own
// array), one of matrices over 16 rows stays out; a col2im is a kernel.
// CHECK-LABEL: func.func @det_col2im
// CHECK: kiln.kernel "pointwise"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.det
// CHECK: kiln.det %arg1
// CHECK: kiln.kernel "pointwise"(%arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.col2im
func.func @det_col2im(%a: tensor<?x3x3xf32, #kiln.dims<[n, 3, 3]>>, %b: tensor<2x20x20xf32>, %c: tensor<1x4x9xf32>)
    -> (tensor<?xf32, #kiln.dims<[n]>>, tensor<2xf32>, tensor<1x1x4x4xf32>) {
  %d = kiln.det %a : (tensor<?x3x3xf32, #kiln.dims<[n, 3, 3]>>) -> tensor<?xf32, #kiln.dims<[n]>>
  %e = kiln.det %b : (tensor<2x20x20xf32>) -> tensor<2xf32>
  %i = kiln.col2im %c {image_shape = array<i64: 4, 4>, block_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x9xf32>) -> tensor<1x1x4x4xf32>
  return %d, %e, %i : tensor<?xf32, #kiln.dims<[n]>>, tensor<2xf32>, tensor<1x1x4x4xf32>
}

// -----

// A range whose length is known (here a symbol: arange(seq) as exported
// models build position ids) is a kernel, fused with what reads it; one whose
// limit is data stays out (its length depends on the data).
// CHECK-LABEL: func.func @ranges
// CHECK: kiln.kernel "pointwise"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK: kiln.symbolic_constant
// CHECK: kiln.range
// CHECK-NEXT: kiln.add
// CHECK: kiln.range %{{.*}}, %arg1, %{{.*}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
func.func @ranges(%x: tensor<?xi64, #kiln.dims<[seq]>>, %limit: tensor<i64>) -> (tensor<?xi64, #kiln.dims<[seq]>>, tensor<?xi64>) {
  %zero = kiln.constant dense<0> : tensor<i64>
  %one = kiln.constant dense<1> : tensor<i64>
  %n = kiln.symbolic_constant [seq] : tensor<i64>
  %r = kiln.range %zero, %n, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #kiln.dims<[seq]>>
  %s = kiln.add %r, %x : (tensor<?xi64, #kiln.dims<[seq]>>, tensor<?xi64, #kiln.dims<[seq]>>) -> tensor<?xi64, #kiln.dims<[seq]>>
  %d = kiln.range %zero, %limit, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %s, %d : tensor<?xi64, #kiln.dims<[seq]>>, tensor<?xi64>
}

// -----

// Attention roots a kernel of its own schedule; the head split feeding it (a
// transpose of each of q, k, v) fuses into its loads, and the head merge after
// it (a transpose keeping the feature dim last) is the order it writes in: one
// kernel for the whole block.
// CHECK-LABEL: func.func @attention_with_head_split_and_merge
// CHECK: %[[K:.*]] = kiln.kernel "attention"(%arg0, %arg1, %arg2) : (tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>) -> tensor<2x5x4x8xf32> {
// CHECK-COUNT-3: kiln.transpose
// CHECK: kiln.attention
// CHECK: %[[M:.*]] = kiln.transpose
// CHECK: kiln.yield %[[M]]
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]
func.func @attention_with_head_split_and_merge(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x4x8xf32>, %v: tensor<2x5x4x8xf32>) -> tensor<2x5x4x8xf32> {
  %qh = kiln.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %kh = kiln.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %vh = kiln.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %o = kiln.attention %qh, %kh, %vh {scale = 0.35 : f64} : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  %m = kiln.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x8xf32>) -> tensor<2x5x4x8xf32>
  return %m : tensor<2x5x4x8xf32>
}

// -----

// A transpose that moves the feature dim, or an attention read by others too,
// stays a kernel of its own.
// CHECK-LABEL: func.func @attention_merge_kept_apart
// CHECK: kiln.kernel "attention"
// CHECK: kiln.kernel "pointwise"
// CHECK: kiln.kernel "attention"
// CHECK: kiln.kernel "pointwise"
func.func @attention_merge_kept_apart(%q: tensor<4x5x8xf32>, %k: tensor<4x5x8xf32>, %v: tensor<4x5x8xf32>) -> (tensor<4x8x5xf32>, tensor<5x4x8xf32>, tensor<4x5x8xf32>) {
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<4x5x8xf32>, tensor<4x5x8xf32>, tensor<4x5x8xf32>) -> tensor<4x5x8xf32>
  %t = kiln.transpose %o {permutation = array<i64: 0, 2, 1>} : (tensor<4x5x8xf32>) -> tensor<4x8x5xf32>
  %o2 = kiln.attention %k, %q, %v {scale = 1.0 : f64} : (tensor<4x5x8xf32>, tensor<4x5x8xf32>, tensor<4x5x8xf32>) -> tensor<4x5x8xf32>
  %t2 = kiln.transpose %o2 {permutation = array<i64: 1, 0, 2>} : (tensor<4x5x8xf32>) -> tensor<5x4x8xf32>
  return %t, %t2, %o2 : tensor<4x8x5xf32>, tensor<5x4x8xf32>, tensor<4x5x8xf32>
}

// -----

// A reshape with nothing to fuse into it (between two matmuls, the flatten
// before a classifier) moves no data: at the top level it stays outside any
// kernel, and the artifact makes it a View step (test/run/views.test). In a
// body it is a copy kernel: a view could alias a loop parameter the body's
// results are copied into.
// CHECK-LABEL: func.func @lone_reshape
// CHECK: %[[A:.*]] = kiln.matmul
// CHECK-NOT: kiln.kernel
// CHECK: %[[R:.*]] = kiln.reshape %[[A]]
// CHECK: kiln.matmul %[[R]]
// CHECK: kiln.if
// CHECK: kiln.matmul
// CHECK: kiln.kernel "pointwise"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.symbolic_constant [3 * n, 4]
// CHECK-NEXT: kiln.reshape
func.func @lone_reshape(%x: tensor<?x3x8xf32, #kiln.dims<[n, 3, 8]>>, %w: tensor<8x8xf32>, %v: tensor<8x4xf32>, %c: tensor<i1>) -> (tensor<?x4xf32, #kiln.dims<[3 * n, 4]>>, tensor<?x4xf32, #kiln.dims<[3 * n, 4]>>) {
  %a = kiln.matmul %x, %w : (tensor<?x3x8xf32, #kiln.dims<[n, 3, 8]>>, tensor<8x8xf32>) -> tensor<?x3x8xf32, #kiln.dims<[n, 3, 8]>>
  %s = kiln.symbolic_constant [3 * n, 8] : tensor<2xi64>
  %r = kiln.reshape %a, %s : (tensor<?x3x8xf32, #kiln.dims<[n, 3, 8]>>, tensor<2xi64>) -> tensor<?x8xf32, #kiln.dims<[3 * n, 8]>>
  %m = kiln.matmul %r, %v : (tensor<?x8xf32, #kiln.dims<[3 * n, 8]>>, tensor<8x4xf32>) -> tensor<?x4xf32, #kiln.dims<[3 * n, 4]>>
  %f = kiln.if %c : tensor<i1> -> tensor<?x4xf32, #kiln.dims<[3 * n, 4]>> {
    %t = kiln.matmul %x, %v : (tensor<?x3x8xf32, #kiln.dims<[n, 3, 8]>>, tensor<8x4xf32>) -> tensor<?x3x4xf32, #kiln.dims<[n, 3, 4]>>
    %q = kiln.symbolic_constant [3 * n, 4] : tensor<2xi64>
    %o = kiln.reshape %t, %q : (tensor<?x3x4xf32, #kiln.dims<[n, 3, 4]>>, tensor<2xi64>) -> tensor<?x4xf32, #kiln.dims<[3 * n, 4]>>
    kiln.yield %o : tensor<?x4xf32, #kiln.dims<[3 * n, 4]>>
  } else {
    kiln.yield %m : tensor<?x4xf32, #kiln.dims<[3 * n, 4]>>
  }
  return %m, %f : tensor<?x4xf32, #kiln.dims<[3 * n, 4]>>, tensor<?x4xf32, #kiln.dims<[3 * n, 4]>>
}

// -----

// Fusion that would multiply code stops where the copies multiply: each
// level reads the one below at two positions (two slices), so fused whole the
// exp would be computed 1024 times per element, 2046 ops in all (past
// kMaxComputedElements). The first level is stored by a kernel of its own and
// the nine above it, slices included, fuse into one.
// CHECK-LABEL: func.func @duplication
// CHECK: %[[LOW:.*]] = kiln.kernel "pointwise"(%arg0) : (tensor<16xf32>) -> tensor<15xf32>
// CHECK: kiln.exp
// CHECK-COUNT-2: kiln.slice
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: %[[TOP:.*]] = kiln.kernel "pointwise"(%[[LOW]]) : (tensor<15xf32>) -> tensor<6xf32>
// CHECK-COUNT-18: kiln.slice
// CHECK-NOT: kiln.kernel
// CHECK: return %[[TOP]]
func.func @duplication(%x: tensor<16xf32>) -> tensor<6xf32> {
  %one = kiln.constant dense<1> : tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %b0 = kiln.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %e0 = kiln.constant dense<15> : tensor<1xi64>
  %f0 = kiln.constant dense<16> : tensor<1xi64>
  %l0 = kiln.slice %b0, %zero, %e0, %one : (tensor<16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<15xf32>
  %r0 = kiln.slice %b0, %one, %f0, %one : (tensor<16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<15xf32>
  %b1 = kiln.add %l0, %r0 : (tensor<15xf32>, tensor<15xf32>) -> tensor<15xf32>
  %e1 = kiln.constant dense<14> : tensor<1xi64>
  %f1 = kiln.constant dense<15> : tensor<1xi64>
  %l1 = kiln.slice %b1, %zero, %e1, %one : (tensor<15xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<14xf32>
  %r1 = kiln.slice %b1, %one, %f1, %one : (tensor<15xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<14xf32>
  %b2 = kiln.add %l1, %r1 : (tensor<14xf32>, tensor<14xf32>) -> tensor<14xf32>
  %e2 = kiln.constant dense<13> : tensor<1xi64>
  %f2 = kiln.constant dense<14> : tensor<1xi64>
  %l2 = kiln.slice %b2, %zero, %e2, %one : (tensor<14xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<13xf32>
  %r2 = kiln.slice %b2, %one, %f2, %one : (tensor<14xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<13xf32>
  %b3 = kiln.add %l2, %r2 : (tensor<13xf32>, tensor<13xf32>) -> tensor<13xf32>
  %e3 = kiln.constant dense<12> : tensor<1xi64>
  %f3 = kiln.constant dense<13> : tensor<1xi64>
  %l3 = kiln.slice %b3, %zero, %e3, %one : (tensor<13xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<12xf32>
  %r3 = kiln.slice %b3, %one, %f3, %one : (tensor<13xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<12xf32>
  %b4 = kiln.add %l3, %r3 : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
  %e4 = kiln.constant dense<11> : tensor<1xi64>
  %f4 = kiln.constant dense<12> : tensor<1xi64>
  %l4 = kiln.slice %b4, %zero, %e4, %one : (tensor<12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<11xf32>
  %r4 = kiln.slice %b4, %one, %f4, %one : (tensor<12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<11xf32>
  %b5 = kiln.add %l4, %r4 : (tensor<11xf32>, tensor<11xf32>) -> tensor<11xf32>
  %e5 = kiln.constant dense<10> : tensor<1xi64>
  %f5 = kiln.constant dense<11> : tensor<1xi64>
  %l5 = kiln.slice %b5, %zero, %e5, %one : (tensor<11xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<10xf32>
  %r5 = kiln.slice %b5, %one, %f5, %one : (tensor<11xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<10xf32>
  %b6 = kiln.add %l5, %r5 : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  %e6 = kiln.constant dense<9> : tensor<1xi64>
  %f6 = kiln.constant dense<10> : tensor<1xi64>
  %l6 = kiln.slice %b6, %zero, %e6, %one : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<9xf32>
  %r6 = kiln.slice %b6, %one, %f6, %one : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<9xf32>
  %b7 = kiln.add %l6, %r6 : (tensor<9xf32>, tensor<9xf32>) -> tensor<9xf32>
  %e7 = kiln.constant dense<8> : tensor<1xi64>
  %f7 = kiln.constant dense<9> : tensor<1xi64>
  %l7 = kiln.slice %b7, %zero, %e7, %one : (tensor<9xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8xf32>
  %r7 = kiln.slice %b7, %one, %f7, %one : (tensor<9xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8xf32>
  %b8 = kiln.add %l7, %r7 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %e8 = kiln.constant dense<7> : tensor<1xi64>
  %f8 = kiln.constant dense<8> : tensor<1xi64>
  %l8 = kiln.slice %b8, %zero, %e8, %one : (tensor<8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<7xf32>
  %r8 = kiln.slice %b8, %one, %f8, %one : (tensor<8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<7xf32>
  %b9 = kiln.add %l8, %r8 : (tensor<7xf32>, tensor<7xf32>) -> tensor<7xf32>
  %e9 = kiln.constant dense<6> : tensor<1xi64>
  %f9 = kiln.constant dense<7> : tensor<1xi64>
  %l9 = kiln.slice %b9, %zero, %e9, %one : (tensor<7xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6xf32>
  %r9 = kiln.slice %b9, %one, %f9, %one : (tensor<7xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6xf32>
  %b10 = kiln.add %l9, %r9 : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %b10 : tensor<6xf32>
}
