export * from './api';
export * from './config';
export * from './entities';
export * from './events';
export * from './imports';
export * from './samples';
export * from './training';
