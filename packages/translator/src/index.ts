export { validateInputResource, validateInputResources, type InputProblem, type InputValidationResult } from './input-validation.ts';
