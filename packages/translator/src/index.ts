export {
  InputJudgements,
  judgedClean,
  validateInputResource,
  validateInputResources,
  type InputProblem,
  type InputValidationResult,
} from './gloo/input-validation.ts';
export { createIstioValidator, type IstioValidatorOptions, type OutputValidator } from './istio/istio-validator.ts';
export { IncrementalTranslator, type IncrementalTranslatorOptions } from './engine/incremental-translator.ts';
export { translate } from './engine/translate.ts';
export type {
  Approval,
  ClusterInfo,
  OutputRef,
  ProducedOutput,
  ResourceState,
  ResourceStatus,
  TranslationInput,
  TranslationProblem,
  TranslationResult,
} from './engine/types.ts';
export {
  DEFAULT_VIP_CIDR,
  DEFAULT_VIP_POOLS,
  allocateVips,
  checkVipPools,
  vipKindOff,
  vipPools,
  virtualDestinationKeys,
  type VipPools,
} from './istio/vip-allocator.ts';
export {
  INSTANCE_ADDRESSES_ANNOTATION,
  INSTANCE_LABEL,
  POLICY_ADDRESSES_ANNOTATION,
  POLICY_HOST_LABEL,
  instanceVipKey,
  policyVipKey,
} from './istio/policy-vips.ts';
export { sameElements } from './engine/same-content.ts';
