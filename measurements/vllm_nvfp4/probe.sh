#!/bin/bash
# usage: probe.sh VERSION  — greps the released source for each NVFP4 / architecture fact
v=$1; t=vllm-$v.tar.gz; d=src-$v
if [ ! -d $d ]; then mkdir -p $d && tar -xzf $t -C $d --wildcards '*/vllm/model_executor/*' 2>/dev/null; fi
q=$(find $d -path '*model_executor/layers/quantization' -type d | head -1)
reg=$(find $d -path '*model_executor/models/registry.py' | head -1)
printf "%s " $v
printf "A:%s " $(grep -l "class ModelOptNvFp4Config" $q/modelopt.py 2>/dev/null | wc -l)
printf "B:%s " $(grep -c "class ModelOptNvFp4FusedMoE" $q/modelopt.py 2>/dev/null)
printf "C:%s " $(ls $q/compressed_tensors/schemes/ 2>/dev/null | grep -c "w4a4_nvfp4")
printf "C16:%s " $(ls $q/compressed_tensors/schemes/ 2>/dev/null | grep -c "w4a16_nvfp4")
printf "D:%s " $(grep -c "class CompressedTensorsW4A4.*MoE\|class CompressedTensorsW4A4Nvfp4MoEMethod\|class CompressedTensorsW4A4MoeMethod" $q/compressed_tensors/compressed_tensors_moe.py 2>/dev/null)
printf "MIX:%s " $(grep -c "MIXED_PRECISION" $q/modelopt.py 2>/dev/null)
for a in Qwen3ForCausalLM Qwen3MoeForCausalLM Llama4ForConditionalGeneration Qwen3NextForCausalLM Qwen3VLForConditionalGeneration Qwen3_5ForConditionalGeneration Qwen3_5MoeForConditionalGeneration MiniMaxM2ForCausalLM Gemma4ForConditionalGeneration; do printf "%s:%s " $a $(grep -c "\"$a\"" $reg 2>/dev/null); done
echo
